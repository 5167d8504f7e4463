#version 330
// The colour lit per vertex (mesh.vert.glsl), interpolated.
in vec3 v_color;
uniform float u_alpha;   // 1: opaque; a ghost run is drawn translucent (app.ghosts)
out vec4 f_color;

void main() {
    f_color = vec4(v_color, u_alpha);
}
