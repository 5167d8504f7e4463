#version 330
// With SHADOWS: one filtered comparison in the shadow map, as mesh.frag.glsl's.
in vec3 v_color;
out vec4 f_color;
#ifdef SHADOWS
uniform sampler2DShadow u_shadow_map;
in vec4 v_shadow;
#endif
void main() {
#ifdef SHADOWS
    float light = texture(u_shadow_map, vec3(v_shadow.xy, min(v_shadow.z, 1.0)));
    f_color = vec4(v_color * (1.0 - v_shadow.w * (1.0 - light)), 1.0);
#else
    f_color = vec4(v_color, 1.0);
#endif
}
