"""Each layer's candidates for a context: what it offers and what each item is worth (one module per
layer); router.policy orchestrates them, router.packing chooses among them."""
