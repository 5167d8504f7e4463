#version 330
// The colour lit per vertex (mesh.vert.glsl), interpolated. With SHADOWS, the direct light's
// share of it is scaled by the fraction of the key light that reaches the pixel: percentage-
// closer filtering (Reeves, Salesin and Cook, "Rendering antialiased shadows with depth maps",
// 1987) with the hardware's depth comparison, which compares the 2x2 texels around the lookup
// and blends the results bilinearly: a soft edge a texel wide. Outside the map the texels at its
// edge answer, which app.shadows keeps free of casters: lit. Depths past the map's far plane
// (the ground far below every caster) compare as the far plane, which only a caster is nearer than.
in vec3 v_color;
uniform float u_alpha;   // 1: opaque; a ghost run is drawn translucent (app.ghosts)
out vec4 f_color;
#ifdef SHADOWS
uniform sampler2DShadow u_shadow_map;
in vec4 v_shadow;
#endif

void main() {
#ifdef SHADOWS
    float light = texture(u_shadow_map, vec3(v_shadow.xy, min(v_shadow.z, 1.0)));
    f_color = vec4(v_color * (1.0 - v_shadow.w * (1.0 - light)), u_alpha);
#else
    f_color = vec4(v_color, u_alpha);
#endif
}
