from .apply import ConfigInvalid, config_apply
from .export import config_export

__all__ = ["ConfigInvalid", "config_apply", "config_export"]
