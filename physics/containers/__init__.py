"""The seed's containers: a contiguous array-backed linked list and distinct pairs."""
