"""litellm fetches its model price map from GitHub when imported; here there is no network."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
