#version 330
// Instanced shape mesh. Per vertex: position and normal in the unit mesh's frame, and `cap`
// (+1/-1 on a capsule's hemispheres, 0 elsewhere). Per instance: the model matrix
// (node world transform times the shape's size scaling), the colour, and the capsule's
// half length in units of its radius.
uniform mat4 u_view_projection;

in vec3 in_position;
in vec3 in_normal;
in float in_cap;
in mat4 in_model;
in vec3 in_color;
in float in_half_length;

out vec3 v_normal_world;
out vec3 v_position_world;
out vec3 v_color;

void main() {
    vec3 p_shape = in_position + vec3(0.0, in_cap * in_half_length, 0.0);
    vec4 p_world = in_model * vec4(p_shape, 1.0);
    // mat3(model) maps normals right for uniform and axis-aligned scalings (all our shapes)
    v_normal_world = mat3(in_model) * in_normal;
    v_position_world = p_world.xyz;
    v_color = in_color;
    gl_Position = u_view_projection * p_world;
}
