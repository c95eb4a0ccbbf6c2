"""``python -m baglm_nb <verb>``: the command line (:mod:`baglm_nb.apps.cli`)."""

from baglm_nb.apps.cli.main import main

if __name__ == "__main__":
    main(exit_process=True)
