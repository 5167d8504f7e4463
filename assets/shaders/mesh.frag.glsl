#version 330
// Lambert shading: a directional light plus a sky/ground hemisphere ambient.
uniform vec3 u_light_dir_world;   // direction the light travels, unit
uniform vec3 u_eye_world;

in vec3 v_normal_world;
in vec3 v_position_world;
in vec3 v_color;
out vec4 f_color;

void main() {
    vec3 n = normalize(v_normal_world);
    float diffuse = max(dot(n, -u_light_dir_world), 0.0);
    float ambient = mix(0.25, 0.45, 0.5 + 0.5 * n.y);
    vec3 to_eye = normalize(u_eye_world - v_position_world);
    vec3 halfway = normalize(to_eye - u_light_dir_world);
    float specular = 0.15 * pow(max(dot(n, halfway), 0.0), 32.0);
    f_color = vec4(v_color * (ambient + 0.75 * diffuse) + specular, 1.0);
}
