#version 330
// Coloured line segments (overlays, the ground grid): a plain line list in world coordinates.
// Compiled with SHADOWS (the grid, app.renderer): the colour is that of lines on the lit
// ground, so where the key light is blocked it keeps only the ambient share a horizontal face
// keeps (mesh.vert.glsl's lighting), as the ground under it does.
uniform mat4 u_view_projection;
in vec3 in_position;
in vec3 in_color;
out vec3 v_color;
#ifdef SHADOWS
uniform mat4 u_shadow_from_world; // world -> shadow map texture coordinates and depth, [0, 1]^3
uniform vec3 u_light_dir_world;   // direction the light travels, unit
out vec4 v_shadow;                // xyz: in the shadow map; w: the direct light's share of v_color
#endif
void main() {
    v_color = in_color;
#ifdef SHADOWS
    float direct = 0.75 * max(-u_light_dir_world.y, 0.0);
    v_shadow = vec4((u_shadow_from_world * vec4(in_position, 1.0)).xyz, direct / (0.45 + direct));
#endif
    gl_Position = u_view_projection * vec4(in_position, 1.0);
}
