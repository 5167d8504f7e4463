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
// A sphere's orthonormal axes project to a_k with sum a_k a_k^T = r^2 I: its disc has radius
// r = sqrt(sum |a_k|^2 / 2) px.
uniform mat4 u_view_projection;
uniform vec3 u_light_dir_world;   // direction the light travels, unit
uniform vec3 u_eye_world;
uniform vec3 u_half_extent;       // the unit mesh's half extents (a capsule adds its half length to y)
uniform vec2 u_viewport_px;       // framebuffer width, height

in mat4 in_model;
in vec3 in_color;
in float in_half_length;

flat out float v_size;            // the point's side, px
flat out float v_disc_radius;     // > 0: a sphere, drawn as this disc (px)
flat out vec2 v_strip[3];         // perp(a_i) / sum_k |perp(a_i) . a_k|: inside iff |v_strip[i] . p| <= 1
flat out vec2 v_axis[3];          // a_k, px
flat out vec3 v_sign;             // s_k = +-1: face s_k e_k faces the eye
flat out vec3 v_face_color[3];

vec3 lit(vec3 n_world) {
    float diffuse = max(dot(n_world, -u_light_dir_world), 0.0);
    float ambient = mix(0.25, 0.45, 0.5 + 0.5 * n_world.y);
    return in_color * (ambient + 0.75 * diffuse);
}

void main() {
    mat4 clip_from_shape = u_view_projection * in_model;
    vec4 c = clip_from_shape[3];
    vec3 h = u_half_extent + vec3(0.0, in_half_length, 0.0);
    vec2 half_px = vec2(0.0);
    float squares = 0.0;
    vec3 to_eye = u_eye_world - in_model[3].xyz;
    for (int k = 0; k < 3; ++k) {
        vec4 axis = clip_from_shape[k];
        v_axis[k] = (axis.xy * c.w - c.xy * axis.w) / (c.w * c.w) * 0.5 * u_viewport_px * h[k];
        half_px += abs(v_axis[k]);
        squares += dot(v_axis[k], v_axis[k]);
        vec3 n = normalize(mat3(in_model)[k]);
        float s = dot(n, to_eye) >= 0.0 ? 1.0 : -1.0;
        v_sign[k] = s;
        v_face_color[k] = lit(s * n);
    }
    for (int i = 0; i < 3; ++i) {
        vec2 n = vec2(-v_axis[i].y, v_axis[i].x);
        float width = abs(dot(n, v_axis[0])) + abs(dot(n, v_axis[1])) + abs(dot(n, v_axis[2]));
        v_strip[i] = n / max(width, 1e-20);
    }
    bool sphere = u_half_extent == vec3(1.0) && in_half_length == 0.0;
    v_disc_radius = sphere ? sqrt(0.5 * squares) : 0.0;
    // every pixel centre within the rectangle lies in the square (+1: rounding at its edges)
    v_size = ceil(2.0 * max(half_px.x, half_px.y)) + 1.0;
    gl_PointSize = v_size;
    gl_Position = c;
}
