"""BibTeX of the datasets and of the toolkit, filled into every dataset card."""

TOOLKIT = """@software{idc_toolkit,
  title  = {idc-toolkit: image difference captioning datasets and evaluation},
  author = {{idc-toolkit developers}},
  year   = {2026},
  version = {0.1.0}
}"""

SPOT_THE_DIFF = """@inproceedings{jhamtani2018learning,
  title     = {Learning to Describe Differences Between Pairs of Similar Images},
  author    = {Jhamtani, Harsh and Berg-Kirkpatrick, Taylor},
  booktitle = {Proceedings of the 2018 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  year      = {2018}
}"""

CLEVR_CHANGE = """@inproceedings{park2019robust,
  title     = {Robust Change Captioning},
  author    = {Park, Dong Huk and Darrell, Trevor and Rohrbach, Anna},
  booktitle = {Proceedings of the IEEE/CVF International Conference on Computer Vision (ICCV)},
  year      = {2019}
}"""

CLEVR_DC = """@inproceedings{kim2021agnostic,
  title     = {Viewpoint-Agnostic Change Captioning with Cycle Consistency},
  author    = {Kim, Hoeseong and Kim, Jongseok and Lee, Hyungseok and Park, Hyunsung and Kim, Gunhee},
  booktitle = {Proceedings of the IEEE/CVF International Conference on Computer Vision (ICCV)},
  year      = {2021}
}"""

IER = """@inproceedings{tan2019expressing,
  title     = {Expressing Visual Relationships via Language},
  author    = {Tan, Hao and Dernoncourt, Franck and Lin, Zhe and Bui, Trung and Bansal, Mohit},
  booktitle = {Proceedings of the 57th Annual Meeting of the Association for Computational Linguistics (ACL)},
  year      = {2019}
}"""

LEVIR_CC = """@article{liu2022remote,
  title   = {Remote Sensing Image Change Captioning With Dual-Branch Transformers: A New Method and a Large Scale Dataset},
  author  = {Liu, Chenyang and Zhao, Rui and Chen, Hao and Zou, Zhengxia and Shi, Zhenwei},
  journal = {IEEE Transactions on Geoscience and Remote Sensing},
  volume  = {60},
  year    = {2022}
}"""

EMU_EDIT = """@inproceedings{sheynin2024emu,
  title     = {Emu Edit: Precise Image Editing via Recognition and Generation Tasks},
  author    = {Sheynin, Shelly and Polyak, Adam and Singer, Uriel and Kirstain, Yuval and Zohar, Amit and Ashual, Oron and Parikh, Devi and Taigman, Yaniv},
  booktitle = {Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},
  year      = {2024}
}"""

SYNED = """@inproceedings{evennou2025reframing,
  title     = {Reframing Image Difference Captioning with {BLIP2IDC} and Synthetic Augmentation},
  author    = {Evennou, Gautier and Chaffin, Antoine and Chappelier, Vivien and Kijak, Ewa},
  booktitle = {Proceedings of the IEEE/CVF Winter Conference on Applications of Computer Vision (WACV)},
  year      = {2025}
}"""

MAGICBRUSH = """@inproceedings{zhang2023magicbrush,
  title     = {{MagicBrush}: A Manually Annotated Dataset for Instruction-Guided Image Editing},
  author    = {Zhang, Kai and Mo, Lingbo and Chen, Wenhu and Sun, Huan and Su, Yu},
  booktitle = {Advances in Neural Information Processing Systems (NeurIPS), Datasets and Benchmarks Track},
  year      = {2023}
}"""

DUBAI_CC = """@article{hoxha2022change,
  title   = {Change Captioning: A New Paradigm for Multitemporal Remote Sensing Image Analysis},
  author  = {Hoxha, Genc and Chouaf, Seloua and Melgani, Farid and Smara, Youcef},
  journal = {IEEE Transactions on Geoscience and Remote Sensing},
  volume  = {60},
  year    = {2022}
}"""

CARD = """@inproceedings{tu2024context,
  title     = {Context-aware Difference Distilling for Multi-change Captioning},
  author    = {Tu, Yunbin and Li, Liang and Su, Li and Zha, Zheng-Jun and Yan, Chenggang and Huang, Qingming},
  booktitle = {Proceedings of the 62nd Annual Meeting of the Association for Computational Linguistics (ACL)},
  year      = {2024}
}"""

LEVIR_MCI = """@article{liu2024change,
  title   = {Change-Agent: Toward Interactive Comprehensive Remote Sensing Change Interpretation and Analysis},
  author  = {Liu, Chenyang and Chen, Keyan and Zhang, Haotian and Qi, Zipeng and Zou, Zhengxia and Shi, Zhenwei},
  journal = {IEEE Transactions on Geoscience and Remote Sensing},
  volume  = {62},
  year    = {2024}
}"""

IMG_DIFF = """@inproceedings{jiao2025imgdiff,
  title     = {Img-Diff: Contrastive Data Synthesis for Multimodal Large Language Models},
  author    = {Jiao, Qirui and Chen, Daoyuan and Huang, Yilun and Li, Yaliang and Shen, Ying},
  booktitle = {Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},
  year      = {2025}
}"""

SECOND_CC = """@article{karaca2025secondcc,
  title   = {Robust Change Captioning in Remote Sensing: {SECOND-CC} Dataset and {MModalCC} Framework},
  author  = {Karaca, Ali Can and others},
  journal = {IEEE Journal of Selected Topics in Applied Earth Observations and Remote Sensing},
  year    = {2025}
}"""

BIRDS_TO_WORDS = """@inproceedings{forbes2019neural,
  title     = {Neural Naturalist: Generating Fine-Grained Image Comparisons},
  author    = {Forbes, Maxwell and Kaeser-Chen, Christine and Sharma, Piyush and Belongie, Serge},
  booktitle = {Proceedings of the 2019 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  year      = {2019}
}"""
