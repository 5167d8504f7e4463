"""What the window shows of the app's state, and how a pixel maps back into the scene: the
camera (app.camera), the scene's renderer (app.renderer) and its shadow map (app.shadows), the
offscreen target, the overlays (app.overlays), picking (app.picking), the frame viewed from and
the trails (app.frames, app.paths). Everything here draws or maps pixels; the state it draws is
the session's (`session`: the simulation, its world state, the selection, the preferences), read
and never stepped.

A `View` belongs to one GL context (`ctx`) and one window size (`size`, in pixels). Without MSAA
the scene is drawn straight into the framebuffer it is given; with it, into the target's
multisampled buffer (`fit_target` remakes the target when the size or the samples change).
"""
import numpy as np

from app import culling, frames, overlays, paths, picking
from app.camera import Camera
from app.renderer import SKY_RGB, Renderer, Target, model_matrices
from app.shadows import ShadowMap

LAUNCH_ARROWS_SECONDS = 3.0     # s of simulated time a launch's velocity arrows stay (`launch_lines`)
LAUNCH_PART_COLORS = ((0.3, 0.8, 1.0), (1.0, 0.45, 0.3), (0.5, 1.0, 0.4), (0.9, 0.5, 1.0))
CONTACT_CROSS, CONTACT_NORMAL = 0.02, 0.05  # m: a contact's cross and normal, small beside the pile's 0.2 m boxes



def half_extents(shape):
    """(3,) the half extents of a shape's box about its node's origin, in the node's frame and units
    (physics.model.shapes: a capsule's and a cylinder's axis is local y); a mesh or hull: 0."""
    kind = shape["type"]
    if kind == "box":
        return 0.5 * np.broadcast_to(np.asarray(shape["size"], float), 3)
    if kind == "sphere":
        return np.full(3, float(shape["radius"]))
    if kind in ("cylinder", "capsule"):
        r, half = float(shape["radius"]), float(shape["height"]) / 2
        return np.array([r, half + (r if kind == "capsule" else 0.0), r])
    return np.zeros(3)

class View:
    def __init__(self, ctx, size, msaa, session):
        """`size` = (width, height) in pixels; `msaa` samples (0: off; None: the user's last choice,
        else 4 on a hardware GL and 0 on Mesa's software renderers, where 4x costs about ten times
        the whole scene: docs/benchmarks.md, section viewer); `session` the state drawn
        (app.session: `sim`, `state`, `selected`, `prefs`, `contacts`, `dynamic`, `launched`,
        `notify`)."""
        self.ctx, self.session = ctx, session
        self.software = any(name in ctx.info["GL_RENDERER"].lower() for name in ("llvmpipe", "softpipe", "swrast"))
        self.size = (max(int(size[0]), 1), max(int(size[1]), 1))
        if msaa is None:
            msaa = session.prefs["msaa"] if session.prefs["msaa"] is not None else (0 if self.software else 4)
        self.msaa = msaa
        self.target = Target(ctx, self.size, msaa)
        self.renderer = Renderer(ctx)
        self.shadow_map = ShadowMap(ctx)
        self.camera = Camera()
        self.follow = False             # the camera rides the selected node (L)
        self.frames, self.trails = frames.FrameView(), paths.Trails()  # view from a node; path history
        self.ghosts = self.hand = None  # drawn over the scene when set: the ghost runs (app.ghosts), the hand's pull (app.handles)

    def show(self, sim):
        """A scene opened (`sim`): its shapes to draw, the frame viewed from and the trails
        reset. -> what the renderer could not draw (its meshes' errors: drawn without them)."""
        self.renderer.set_shapes(sim.shapes, sim.colors, sim.scene.meshes, sim.scene.visible, sim.scene.parent)
        self.frames.reset()
        self.trails.clear(keep_nodes=False)
        return self.renderer.mesh_errors

    def forget_history(self):
        """The run went back to its start (a reset): the trails and the frame's samples go."""
        self.trails.clear()
        self.frames.history.clear()

    def resize(self, width, height):
        self.size = (max(int(width), 1), max(int(height), 1))

    def set_msaa(self, samples):
        """Multisample the scene with `samples` (0: off; the context's maximum at most: Target)
        from the next frame on, kept as a view preference. The target is remade at the start of
        the next frame (`fit_target`), not in this one: the window chose this frame's framebuffer
        by `draws_offscreen` already."""
        self.msaa = self.session.prefs["msaa"] = int(samples)

    def fit_target(self, samples=None):
        """Remake the offscreen target when the window's size or the samples asked for (`samples`,
        default `msaa`) changed."""
        samples = self.msaa if samples is None else samples
        if self.target.size != self.size or self.target.requested != samples:
            # bind the new target before releasing the old: moderngl re-binds the current
            # framebuffer after creating one, and a released name there is GL_INVALID_OPERATION
            old, self.target = self.target, Target(self.ctx, self.size, samples)
            self.target.draw.use()
            old.release()

    def toggle_follow(self):
        self.follow = not self.follow

    def reset_camera(self):
        self.camera.reset()
        self.frame_scene()

    def frame_scene(self):
        """Fit the camera to the shapes' world boxes (`half_extents`; planes excluded, a mesh counts
        as its node's origin) with a twentieth of their span around them: a robot of 1.5 m fills
        the view as a scene of 20 m does."""
        if self.session.state is None:
            return
        state, shapes = self.session.state, self.session.sim.shapes
        finite = [i for i, s in enumerate(shapes) if s is not None and s["type"] != "plane"]
        nodes = np.asarray(finite if finite else range(len(state["T"])), np.int64)
        local = np.array([half_extents(shapes[i]) for i in finite]) if finite else np.zeros((len(nodes), 3))
        # the world box of a box of half extents e turned by R: |R| (S e)
        extent = np.einsum("nij,nj->ni", np.abs(state["R"][nodes]), np.abs(state["S"][nodes]) * local)
        centre = state["T"][nodes]
        keep = np.all(np.isfinite(centre), axis=1) & np.all(np.isfinite(extent), axis=1)
        if not keep.any():
            return
        centre, extent = self.frames.to_frame(state, centre[keep]), extent[keep]
        lo, hi = (centre - extent).min(0), (centre + extent).max(0)
        margin = 0.05 * float(np.linalg.norm(hi - lo))
        self.camera.frame(lo - margin, hi + margin, self.size[0] / self.size[1])

    def view_projection(self):
        """P V M_F⁻¹: the orbit camera in the frame viewed from (app.frames; the world: M_F = I)."""
        return self.camera.projection(self.size[0] / self.size[1]) @ self.camera.view() @ self.frames.world_to_frame(self.session.state)

    def eye_world(self):
        return self.frames.to_world(self.session.state, self.camera.eye_world)

    def forward_world(self):
        """The camera's viewing direction (unit, world)."""
        forward = self.camera.target_world - self.camera.eye_world
        return self.frames.direction_to_world(self.session.state, forward / np.linalg.norm(forward))

    def world_ray(self, x, y):
        """The world ray through window pixel (x, y) (pyglet's origin: bottom left)."""
        origin, direction = self.camera.ray(x, y, *self.size)
        return self.frames.to_world(self.session.state, origin), self.frames.direction_to_world(self.session.state, direction)

    def view_from(self, node):
        """Hold `node`'s frame still on screen (None: the world), the picture kept (app.frames)."""
        self.frames.choose(self.camera, self.session.state, node)
        self.session.notify(f"viewing from {self.frames.name(self.session.sim)}")

    def sample_frames(self):
        """A sample of the trails and of the selected node's acceleration terms (display only)."""
        if self.session.sim is None or self.session.state is None:
            return
        try:
            self.trails.sample(self.session.state, self.session.sim.time, (self.frames.node,))
            self.frames.sample(self.session.sim, self.session.state, self.session.selected)
        except Exception as error:  # noqa: BLE001 - measurements are display only
            self.frames.decompose = False
            self.session.notify(f"acceleration terms: {type(error).__name__}: {error}")

    def focal_px(self):
        """The projection's focal length in pixels, P[1, 1] * height / 2 (app.culling)."""
        return self.camera.projection(self.size[0] / self.size[1])[1, 1] * self.size[1] / 2

    def render_scene(self, fbo):
        vp, s = self.view_projection(), self.session.state
        shadow = None
        if s is not None and self.session.prefs["shadows"]:  # the light's depth pass first: it binds its own framebuffer
            shadow = self.shadow_map.render(self.renderer, s["T"], s["R"], s["S"], vp, key=s, focal_px=self.focal_px())
        fbo.use()
        fbo.clear(*SKY_RGB, 1.0, depth=1.0)
        self.renderer.draw_grid(vp, shadow)
        if s is None:
            return
        opacity = self.session.sim.scene.opacity
        see_through = opacity is not None and bool((opacity < 1.0).any())
        self.renderer.draw_shapes(s["T"], s["R"], s["S"], vp, self.focal_px(), self.session.selected, self.eye_world(),
                                  self.session.sim.sleeping(), shadow=shadow, only=opacity >= 1.0 if see_through else None)
        if see_through:     # see-through nodes last, blended over what they cover (a car's cabin over its cargo)
            drawn = dict(self.renderer.drawn)
            for alpha in np.unique(opacity[opacity < 1.0]):
                self.renderer.draw_shapes(s["T"], s["R"], s["S"], vp, self.focal_px(), self.session.selected, self.eye_world(),
                                          self.session.sim.sleeping(), alpha=float(alpha), only=opacity == alpha, shadow=shadow)
                for key, count in self.renderer.drawn.items():
                    drawn[key] = drawn.get(key, 0) + count
            self.renderer.drawn = drawn
        if self.ghosts is not None:
            self.ghosts.draw(vp)
        for segments, colors in self.overlay_lines():
            self.renderer.draw_lines(segments, colors, vp)

    def overlay_lines(self):
        """One line list per enabled overlay (each one draw call); what is off screen or under
        a pixel long is left out (app.overlays)."""
        s, on, scale = self.session.state, self.session.prefs["overlays"], self.session.prefs["arrow_scale"]
        ppm = culling.screen_radius(s["T"], 1.0, self.view_projection(), self.focal_px())  # px per m
        lines = []
        if on["frames"]:
            lines.append(overlays.frames(s["T"], s["R"], 0.5 * np.mean(s["S"], axis=1), ppm))
        if on["velocity"]:
            lines.append(overlays.arrows(s["T"], s["v"], scale, overlays.COLORS["velocity"], ppm))
        if on["angular_velocity"]:
            lines.append(overlays.arrows(s["T"], s["omega"], scale, overlays.COLORS["angular_velocity"], ppm))
        dynamic = self.session.dynamic[ppm[self.session.dynamic] > 0]  # dynamic nodes on screen
        if on["angular_momentum"] and dynamic.size:
            L = self.session.sim.body_momenta()["spin"][dynamic]
            lines.append(overlays.arrows(s["T"][dynamic], L, scale, overlays.COLORS["angular_momentum"], ppm[dynamic]))
        if on["inertial"] and dynamic.size:
            try:
                accelerations = self.session.sim.inertial_accelerations()
            except Exception as error:  # noqa: BLE001 - a display error must not stop physics
                accelerations = {}
                self.session.notify(f"inertial accelerations unavailable: {error}")
            lines.append(overlays.concatenate([
                overlays.arrows(s["T"][dynamic], np.asarray(a)[dynamic], scale, overlays.COLORS.get(name, (1, 1, 1)), ppm[dynamic])
                for name, a in accelerations.items()
            ]))
        if on["contacts"] and len(self.session.contacts[0]):
            points, normals = self.session.contacts
            ppm = culling.screen_radius(points, 1.0, self.view_projection(), self.focal_px())
            lines.append(overlays.concatenate([
                overlays.crosses(points, CONTACT_CROSS, overlays.COLORS["contact_point"], ppm),
                overlays.arrows(points, normals, CONTACT_NORMAL, overlays.COLORS["contact_normal"], ppm),
            ]))
        lines += self.trails.overlay_lines(s, self.frames.node)
        if self.session.selected is not None:
            ppm = culling.screen_radius(s["T"], 1.0, self.view_projection(), self.focal_px())
            lines += self.frames.overlay_lines(s, self.session.selected, scale, ppm)
        return lines + (self.hand.overlay_lines(s) if self.hand is not None else []) + self.launch_lines()

    def launch_lines(self):
        """The last launch's velocity at the muzzle, as arrows (0.1 s of flight long) for
        LAUNCH_ARROWS_SECONDS of simulated time: white the launch velocity, and from the muzzle its
        parts, each moving ancestor's in a colour of its own and the launcher's own speed in yellow
        (they add up to the white one; the message names them)."""
        launch = self.session.launched
        if launch is None or not 0.0 <= self.session.sim.time - launch.time <= LAUNCH_ARROWS_SECONDS:
            return []
        vectors = [launch.velocity_world, launch.velocity_world - launch.muzzle_velocity_world, *launch.parts.values()]
        colors = [(1.0, 1.0, 1.0), (1.0, 0.9, 0.2)] + [LAUNCH_PART_COLORS[i % len(LAUNCH_PART_COLORS)]
                                                          for i in range(len(launch.parts))]
        return [overlays.concatenate([overlays.arrows(launch.point_world, v, 0.1, c) for v, c in zip(vectors, colors)])]

    def pick(self, x, y):
        """Select the node under window pixel (x, y); empty space deselects."""
        self.session.selected, _ = self.pick_point(x, y)
        return self.session.selected

    def pick_point(self, x, y, reach=0):
        """(node, world point) of the first shape under window pixel (x, y); (None, None) if none.
        With `reach` (pixels), a ray that misses is tried again around the pixel, in rings out to
        `reach` px, and the nearest ring's hit is taken: a link a pixel or two wide is grabbed as
        easily as a wide one."""
        s = self.session.state
        instances = {
            kind: (g["index"], model_matrices(s["T"][g["index"]], s["R"][g["index"]], s["S"][g["index"]], g["shape_matrices"]), g["half_length"])
            for kind, g in self.renderer.groups.items()
        }
        rings = [(0.0, 1)] + [(r, 12) for r in range(2, int(reach) + 1, 2)]
        for radius, count in rings:
            best = (None, np.inf, None)
            for k in range(count):
                angle = 2 * np.pi * k / count
                origin, direction = self.world_ray(x + radius * np.cos(angle), y + radius * np.sin(angle))
                node, t = picking.pick(origin, direction, instances)
                if node is not None and t < best[1]:
                    best = (node, t, origin + t * direction)
            if best[0] is not None:
                return best[0], best[2]
        return None, None


    def release(self):
        self.target.release()
        self.shadow_map.release()
