"""The step: Data, the stages, the Simulation facade, snapshots and what may be restored, the timeline, recordings and keyframes."""
