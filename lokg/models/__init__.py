"""Lightning wrappers (``*_module.py``) around the plain components of ``components/``."""
