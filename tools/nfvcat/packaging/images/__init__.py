"""VNF images as catalog entries (``images/NAME/``): the recipe, the lock the build writes, the builder."""
