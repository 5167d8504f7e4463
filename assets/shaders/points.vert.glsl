#version 330
// Instanced shapes a few pixels across, drawn as one point each (app.renderer's "point" level
// of detail), cut down in points.frag.glsl to the shape's box (a sphere: its disc) on screen.
// With C = VP M and c = C e4 the clip position of the shape's origin, local axis k (half
// extent h_k, unit mesh frame) moves the pixel position by
//     a_k = (C_k.xy c.w - c.xy C_k.w) / c.w^2 * viewport / 2 * h_k
// (the perspective map linearized at the centre: exact to first order in size / distance, and
// these shapes are a few pixels across). The box projects to the zonotope {sum u_k a_k, |u_k| <= 1},
// a centrally symmetric polygon with edges along the a_k: exactly the points p with
// |perp(a_i) . p| <= sum_k |perp(a_i) . a_k| for i = 1..3, tiled by its three faces that face
// the eye (face k: centre s_k a_k, spanned by the other two a). Each face is lit as the mesh's
// face with that normal (per-vertex lighting of mesh.vert.glsl on a flat face is one colour).
// The outputs are few on purpose: llvmpipe sets every point up as a quad, per output.
// a_k is passed as s_k a_k (the zonotope and the faces' spans do not change with a_k's sign).
// A sphere's orthonormal axes project to a_k with sum a_k a_k^T = r^2 I: its disc has radius
// r = sqrt(sum |a_k|^2 / 2) px.
// Compiled with SHADOWS defined (app.renderer), the direct light of every face is scaled by one
// bilinear comparison in the shadow map (app.shadows) at the shape's centre moved toward the
// light by its bounding radius: the shape never shades itself, a caster above it does (a
// shape a few pixels wide is in one light).
uniform mat4 u_view_projection;
uniform vec3 u_light_dir_world;   // direction the light travels, unit
uniform vec3 u_eye_world;
uniform vec3 u_half_extent;       // the unit mesh's half extents (a capsule adds its half length to y)
uniform vec2 u_viewport_px;       // framebuffer width, height
#ifdef SHADOWS
uniform mat4 u_shadow_from_world; // world -> shadow map texture coordinates and depth, [0, 1]^3
uniform sampler2DShadow u_shadow_map;
#endif

in mat4 in_model;
in vec3 in_color;
in float in_half_length;

flat out vec2 v_size_disc;        // the point's side, px; > 0: a sphere, drawn as a disc of this radius (px)
flat out vec2 v_axis[3];          // s_k a_k, px: face s_k e_k faces the eye
flat out vec3 v_color;
flat out vec3 v_light;            // the lighting factor of each eye-facing face

void main() {
    mat4 clip_from_shape = u_view_projection * in_model;
    vec4 c = clip_from_shape[3];
    vec3 h = u_half_extent + vec3(0.0, in_half_length, 0.0);
    vec2 half_px = vec2(0.0);
    float squares = 0.0;
    vec3 to_eye = u_eye_world - in_model[3].xyz;
    float lit = 1.0;
#ifdef SHADOWS
    float radius = length(vec3(length(in_model[0].xyz) * h.x, length(in_model[1].xyz) * h.y, length(in_model[2].xyz) * h.z));
    vec3 s = (u_shadow_from_world * vec4(in_model[3].xyz - u_light_dir_world * radius, 1.0)).xyz;
    lit = texture(u_shadow_map, vec3(s.xy, min(s.z, 1.0)));
#endif
    for (int k = 0; k < 3; ++k) {
        vec4 axis = clip_from_shape[k];
        vec2 a = (axis.xy * c.w - c.xy * axis.w) / (c.w * c.w) * 0.5 * u_viewport_px * h[k];
        half_px += abs(a);
        squares += dot(a, a);
        vec3 n = normalize(mat3(in_model)[k]);
        n *= dot(n, to_eye) >= 0.0 ? 1.0 : -1.0;
        v_axis[k] = dot(mat3(in_model)[k], to_eye) >= 0.0 ? a : -a;
        v_light[k] = mix(0.25, 0.45, 0.5 + 0.5 * n.y) + 0.75 * lit * max(dot(n, -u_light_dir_world), 0.0);
    }
    bool sphere = u_half_extent == vec3(1.0) && in_half_length == 0.0;
    // every pixel centre within the rectangle lies in the square (+1: rounding at its edges)
    float size = ceil(2.0 * max(half_px.x, half_px.y)) + 1.0;
    v_size_disc = vec2(size, sphere ? sqrt(0.5 * squares) : 0.0);
    v_color = in_color;
    gl_PointSize = size;
    gl_Position = c;
}
