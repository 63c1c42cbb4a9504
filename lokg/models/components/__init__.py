"""Plain ``nn.Module`` building blocks of the method (no Lightning)."""
