#version 330
// The ray through this texel (shadow_point.vert.glsl) against the unit box by slabs, or the
// unit sphere; the depth written is where it leaves the shape (see app.shadows: back faces),
// plus u_bias (window depth), as the meshes' polygon offset.
uniform bool u_sphere;
uniform float u_depth_per_m;        // window depth per metre along l
uniform float u_bias;

flat in vec3 v_gx;
flat in vec3 v_gy;
flat in vec3 v_d;
flat in vec2 v_depth_size;

void main() {
    // the texel centre relative to the shape's centre, texels, y up (gl_PointCoord's y runs down)
    vec2 p = (gl_PointCoord - 0.5) * vec2(v_depth_size.y, -v_depth_size.y);
    vec3 u = p.x * v_gx + p.y * v_gy;
    float t_exit;
    if (u_sphere) {
        // |u + t d|^2 = 1: t = (-b + sqrt(b^2 - a c)) / a
        float a = dot(v_d, v_d), b = dot(u, v_d), c = dot(u, u) - 1.0;
        float disc = b * b - a * c;
        if (disc < 0.0) {
            discard;
        }
        t_exit = (-b + sqrt(disc)) / a;
    } else {
        float t_enter = -1e30;
        t_exit = 1e30;
        for (int k = 0; k < 3; ++k) {
            if (abs(v_d[k]) < 1e-9) {
                if (abs(u[k]) > 1.0) {
                    discard;
                }
            } else {
                float t1 = (-1.0 - u[k]) / v_d[k], t2 = (1.0 - u[k]) / v_d[k];
                t_enter = max(t_enter, min(t1, t2));
                t_exit = min(t_exit, max(t1, t2));
            }
        }
        if (t_enter > t_exit) {
            discard;
        }
    }
    gl_FragDepth = v_depth_size.x + t_exit * u_depth_per_m + u_bias;
}
