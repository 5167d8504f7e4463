#version 330
// The key light's depth pass (app.shadows), meshes: an instanced shape mesh placed as in
// mesh.vert.glsl, projected by the light's orthographic view-projection. Depth only.
uniform mat4 u_light_view_projection;

in vec3 in_position;
in float in_cap;
in mat4 in_model;
in float in_half_length;

void main() {
    vec3 p_shape = in_position + vec3(0.0, in_cap * in_half_length, 0.0);
    gl_Position = u_light_view_projection * (in_model * vec4(p_shape, 1.0));
}
