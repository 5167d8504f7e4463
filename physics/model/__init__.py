"""What a simulation holds constant: the Model, the transform hierarchy, rigid-body inertia, shapes and convex hulls."""
