#version 330
// Coloured line segments (overlays, the ground grid): a plain line list in world coordinates.
uniform mat4 u_view_projection;
in vec3 in_position;
in vec3 in_color;
out vec3 v_color;
void main() {
    v_color = in_color;
    gl_Position = u_view_projection * vec4(in_position, 1.0);
}
