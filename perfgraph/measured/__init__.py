"""Measured runs held against the model: the format adapters, reading files, the configuration a
run is evaluated at, comparison, findings, curves and calibration."""
