"""The spend API beyond finops/api/views.py: the FOCUS usage export (`/api/v1/focus`)."""
