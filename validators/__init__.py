"""Checks of outside contracts: file formats Hyperloom writes and reads back."""
