"""The alerts domain's reads: the alert list, a cap's status and forecast, the spike method."""
