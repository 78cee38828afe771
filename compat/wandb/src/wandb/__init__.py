"""wandb's API on wisp (the ``wandb`` compatibility distribution, compat/wandb).

Importing this package installs ``wisp.wandb_compat`` as ``sys.modules["wandb"]``; the
import then returns that module (Python returns what ``sys.modules`` holds), and
``wandb.<sub>`` imports resolve to ``wisp.wandb_compat.<sub>``.
"""

from wisp.wandb_compat import install

_WISP_DIST = True
install()
