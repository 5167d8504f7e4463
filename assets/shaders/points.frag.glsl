#version 330
// A point of points.vert.glsl keeps the pixels whose centre lies in the shape's projected box
// (a sphere: disc), the rule a rasterized mesh follows (so a shape covering no pixel centre
// shows nothing either), coloured by the eye-facing face of the box that holds the centre.
flat in vec2 v_size_disc;
flat in vec2 v_axis[3];
flat in vec3 v_color;
flat in vec3 v_light;
uniform float u_alpha;   // 1: opaque; a ghost run is drawn translucent (app.ghosts)
out vec4 f_color;

void main() {
    // the pixel centre relative to the shape's centre, px, y up (gl_PointCoord's y runs down)
    vec2 p = (gl_PointCoord - 0.5) * vec2(v_size_disc.x, -v_size_disc.x);
    float disc = v_size_disc.y;
    if (disc > 0.0) {
        if (dot(p, p) > disc * disc) {
            discard;
        }
    } else {
        // inside the zonotope iff |perp(a_i) . p| <= sum_k |perp(a_i) . a_k| for every i
        for (int i = 0; i < 3; ++i) {
            vec2 n = vec2(-v_axis[i].y, v_axis[i].x);
            float width = abs(dot(n, v_axis[0])) + abs(dot(n, v_axis[1])) + abs(dot(n, v_axis[2]));
            if (abs(dot(n, p)) > width) {
                discard;
            }
        }
    }
    // face k: p = s_k a_k + u a_i + v a_j with |u|, |v| <= 1 (a face seen edge-on has no area)
    float light = v_light[0];
    for (int k = 2; k >= 0; --k) {
        mat2 span = mat2(v_axis[(k + 1) % 3], v_axis[(k + 2) % 3]);
        if (abs(determinant(span)) > 1e-6) {
            vec2 uv = inverse(span) * (p - v_axis[k]);
            if (max(abs(uv.x), abs(uv.y)) <= 1.0 + 1e-4) {
                light = v_light[k];
            }
        }
    }
    f_color = vec4(v_color * light, u_alpha);
}
