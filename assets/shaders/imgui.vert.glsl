#version 330
// Dear ImGui's draw data: 2D positions in display pixels (origin top left), UV, RGBA8 colour.
uniform mat4 u_projection;
in vec2 in_position;
in vec2 in_uv;
in vec4 in_color;
out vec2 v_uv;
out vec4 v_color;
void main() {
    v_uv = in_uv;
    v_color = in_color;
    gl_Position = u_projection * vec4(in_position, 0.0, 1.0);
}
