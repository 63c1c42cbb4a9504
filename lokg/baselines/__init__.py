"""Baselines that replace TAIMR and/or ITTC and reuse the same KG, budget, reader and metrics."""
