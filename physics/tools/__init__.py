"""What runs simulations for a user: command-line options and signals, the compare and sweep tools, the MuJoCo peer, the warm-up, fuzzing, crafted inputs, trajectories and the toggles' sentences."""
