"""The dashboard's modal screens: help, save as, confirm."""
