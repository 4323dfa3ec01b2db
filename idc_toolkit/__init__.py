"""idc-toolkit: image difference captioning datasets in one schema, scored as the papers do.

Importing the package is cheap on purpose: heavy libraries (torch, transformers, diffusers)
are imported inside the functions that need them, so ``idc-eval --predictions`` starts fast.
"""

__version__ = "0.1.0"
