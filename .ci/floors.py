"""Print the lowest versions pyproject.toml declares (``name>=X`` -> ``name==X``) for the named
extras and the base dependencies: the constraints of CI's lowest-versions install, read from the
one place the floors are written."""

import re
import sys
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"]
requirements = list(project["dependencies"])
for extra in sys.argv[1:]:
    requirements += project["optional-dependencies"][extra]
for requirement in requirements:
    match = re.match(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*>=\s*([0-9][^,;\s]*)", requirement)
    if match:
        print(f"{match.group(1)}=={match.group(2)}")
