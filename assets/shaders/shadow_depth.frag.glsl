#version 330
// The key light's depth pass writes depth only: nothing to compute per fragment.
void main() {
}
