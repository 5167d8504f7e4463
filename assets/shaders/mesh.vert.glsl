#version 330
// Instanced shape mesh, lit per vertex: a directional light plus a sky/ground hemisphere
// ambient (Lambert). Per vertex: position and normal in the unit mesh's frame, and `cap`
// (+1/-1 on a capsule's hemispheres, 0 elsewhere). Per instance: the model matrix (node world
// transform times the shape's size scaling), the colour, and the capsule's half length in
// units of its radius.
// Why per vertex: on a software renderer the fragment shader runs for most of the screen (the
// ground) and every interpolated value costs per triangle; a directional light on flat faces
// gives the same colour per vertex as per pixel, and curved shapes are finely tessellated.
// Compiled with SHADOWS defined (app.renderer) it also passes the vertex's position in the
// shadow map (app.shadows) and the share of its colour that the key light gives, which the
// fragment shader takes away where the light is blocked. Compiled with FOOTPRINT as well (the
// ground planes only, app.renderer) it writes the clip distances to the shadow map's footprint:
// a program that writes gl_ClipDistance is clipped by it on Mesa's llvmpipe even with
// GL_CLIP_DISTANCEi disabled, so the bodies' program must not write them at all (a body outside
// the last scene's footprint vanished).
uniform mat4 u_view_projection;
uniform vec3 u_light_dir_world;   // direction the light travels, unit

in vec3 in_position;
in vec3 in_normal;
in float in_cap;
in mat4 in_model;
in vec3 in_color;
in float in_half_length;

out vec3 v_color;
#ifdef SHADOWS
uniform mat4 u_shadow_from_world; // world -> shadow map texture coordinates and depth, [0, 1]^3
out vec4 v_shadow;                // xyz: in the shadow map; w: the direct light's share of v_color
#endif
#ifdef FOOTPRINT
uniform vec4 u_footprint[4];      // planes (n, d), n . p + d >= 0 inside the map's footprint (app.renderer, planes)
out float gl_ClipDistance[4];
#endif

void main() {
    vec3 p_shape = in_position + vec3(0.0, in_cap * in_half_length, 0.0);
    vec4 p_world = in_model * vec4(p_shape, 1.0);
    // mat3(model) maps normals right for uniform and axis-aligned scalings (all our shapes)
    vec3 n = normalize(mat3(in_model) * in_normal);
    float diffuse = max(dot(n, -u_light_dir_world), 0.0);
    float ambient = mix(0.25, 0.45, 0.5 + 0.5 * n.y);
    v_color = in_color * (ambient + 0.75 * diffuse);
#ifdef SHADOWS
    v_shadow = vec4((u_shadow_from_world * p_world).xyz, 0.75 * diffuse / (ambient + 0.75 * diffuse));
#endif
#ifdef FOOTPRINT
    for (int i = 0; i < 4; ++i) {
        gl_ClipDistance[i] = dot(u_footprint[i], p_world);
    }
#endif
    gl_Position = u_view_projection * p_world;
}
