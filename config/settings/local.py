"""Local development on embedded defaults (the run command). Debug pages stay off, as in production:
`make run` is what people expose on a laptop or a VM. DJANGO_DEBUG=true turns them on (docs/production.md)."""

from config.settings.base import *  # noqa: F403
from config.settings.base import env

DEBUG = env.bool("DJANGO_DEBUG", default=False)
