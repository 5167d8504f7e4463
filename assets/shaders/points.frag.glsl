#version 330
// A point of points.vert.glsl keeps the pixels whose centre lies in the shape's projected box
// (a sphere: disc), the rule a rasterized mesh follows (so a shape covering no pixel centre
// shows nothing either), coloured by the eye-facing face of the box that holds the centre.
flat in float v_size;
flat in float v_disc_radius;
flat in vec2 v_strip[3];
flat in vec2 v_axis[3];
flat in vec3 v_sign;
flat in vec3 v_face_color[3];
out vec4 f_color;

void main() {
    // the pixel centre relative to the shape's centre, px, y up (gl_PointCoord's y runs down)
    vec2 p = (gl_PointCoord - 0.5) * vec2(v_size, -v_size);
    if (v_disc_radius > 0.0 ? dot(p, p) > v_disc_radius * v_disc_radius
            : abs(dot(v_strip[0], p)) > 1.0 || abs(dot(v_strip[1], p)) > 1.0 || abs(dot(v_strip[2], p)) > 1.0) {
        discard;
    }
    // face k: p = s_k a_k + u a_i + v a_j with |u|, |v| <= 1 (a face seen edge-on has no area)
    vec3 color = v_face_color[0];
    for (int k = 2; k >= 0; --k) {
        mat2 span = mat2(v_axis[(k + 1) % 3], v_axis[(k + 2) % 3]);
        if (abs(determinant(span)) > 1e-6) {
            vec2 uv = inverse(span) * (p - v_sign[k] * v_axis[k]);
            if (max(abs(uv.x), abs(uv.y)) <= 1.0 + 1e-4) {
                color = v_face_color[k];
            }
        }
    }
    f_color = vec4(color, 1.0);
}
