"""Joints and contacts as constraint rows, the joint graph, the velocity solver (Gauss-Seidel), RATTLE's projections, the scene solver and its carried state."""
