#version 330
// The key light's depth pass (app.shadows), shapes a few texels wide: one point each, cut in
// shadow_point.frag.glsl to the texels whose ray from the light crosses the shape, at the depth
// where the ray leaves it. That is what the depth pass's meshes give with their front faces
// culled, for the price of one vertex.
// The projection is orthographic, so texel offsets map to world offsets linearly: a texel
// (px, py) from the centre's is the world offset px R + py U (u_texel_right_world,
// u_texel_up_world: the light's right and up axes, a texel long), and the ray through it runs
// along l. In the shape's box coordinates u (the unit box [-1, 1]^3: world offset W u with
// W = [h_k M_k], M_k the model's columns, h the unit mesh's half extents) the ray is
//     u(t) = px gx + py gy + t d,   gx = W^-1 R, gy = W^-1 U, d = W^-1 l,
// t in metres along l from the plane through the centre square to l.
uniform mat4 u_light_view_projection;
uniform vec3 u_light_dir_world;     // l, unit
uniform vec3 u_texel_right_world;   // R, m
uniform vec3 u_texel_up_world;      // U, m
uniform vec3 u_half_extent;         // the unit mesh's half extents (a capsule adds its half length to y)

in mat4 in_model;
in float in_half_length;

flat out vec3 v_gx;
flat out vec3 v_gy;
flat out vec3 v_d;
flat out vec2 v_depth_size;         // the centre's window depth; the point's side in texels

void main() {
    vec3 h = u_half_extent + vec3(0.0, in_half_length, 0.0);
    mat3 w = mat3(in_model[0].xyz * h.x, in_model[1].xyz * h.y, in_model[2].xyz * h.z);
    mat3 w_inverse = inverse(w);
    v_gx = w_inverse * u_texel_right_world;
    v_gy = w_inverse * u_texel_up_world;
    v_d = w_inverse * u_light_dir_world;
    // the box's half size across the light, in texels: sum_k |h_k M_k . R| / |R|^2 (and U)
    vec2 half_texels = vec2(0.0);
    float r2 = dot(u_texel_right_world, u_texel_right_world);
    for (int k = 0; k < 3; ++k) {
        half_texels += abs(vec2(dot(w[k], u_texel_right_world), dot(w[k], u_texel_up_world))) / r2;
    }
    float size = ceil(2.0 * max(half_texels.x, half_texels.y)) + 1.0;
    vec4 c = u_light_view_projection * in_model[3];
    v_depth_size = vec2(0.5 * c.z + 0.5, size);
    gl_PointSize = size;
    gl_Position = c;
}
