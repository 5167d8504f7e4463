"""Hands on: pull a dynamic body with the mouse, or flick it.

- Ctrl + left drag on a body pulls it: a soft mouse joint (physics.dynamics.mouse_joint, as Box2D's samples
  and MuJoCo's perturbation) from the grabbed point towards the cursor's point on the plane
  through the grab point facing the camera. The plane keeps its depth along the camera's viewing
  axis, so in a view from a moving frame it moves with the frame. Every step while the button is
  held, the joint's force is given as a "force" input of the timeline (`Session.give_input`): it
  is recorded, replays bit for bit and reaches the ghosts like any input.
- Ctrl + right click on a body flicks it: the impulse m FLICK_SPEED along the view ray, at the hit
  point; Ctrl + right drag flicks it along the drag (measured on the same plane) at
  drag length / FLICK_SECONDS, at most MAX_FLICK_SPEED. One "impulse" input.

The body is the node hit if it is dynamic, else the dynamic body it is fixed to (a car's cabin
moves the car); anything else says so on the status message. The app computes no physics here: the
joint's force comes from physics, the flick is the user's choice of Δv = J / m.
"""
import numpy as np

from app import overlays
from physics.dynamics.mouse_joint import MouseJoint

FLICK_SPEED = 4.0        # m/s: a click's Δv along the view ray
FLICK_SECONDS = 0.25     # s: a drag of d metres flicks at d / FLICK_SECONDS
MAX_FLICK_SPEED = 20.0   # m/s
CLICK_PIXELS = 4         # a press and release closer than this are a click, not a drag
GRAB_REACH = 8           # px: a Ctrl+press that misses every shape takes the nearest one within this
SPRING_COLOR = (1.0, 1.0, 1.0)
TARGET_SIZE = 0.05       # m: the cross at the cursor's point


def body_of(sim, node):
    """The dynamic body that moves `node`: itself if dynamic, else the nearest dynamic ancestor it
    is fixed to through fixed nodes only; None if there is none (fixed to the world, kinematic)."""
    while node is not None and node >= 0:
        if sim.motion[node] == "dynamic":
            return int(node)
        if sim.motion[node] != "fixed":
            return None
        node = int(sim.parent[node])
    return None


def on_plane(origin, direction, plane_point, normal):
    """The ray's point on the plane (origin, direction, plane point, normal: world); None if the
    ray runs along the plane."""
    facing = float(direction @ normal)
    if abs(facing) < 1e-9:
        return None
    return origin + direction * float((plane_point - origin) @ normal) / facing


class Hand:
    """The viewer's hand: at most one pull (`joint`) held, or one flick being aimed."""

    def __init__(self, viewer):
        self.viewer = viewer
        self.joint = None            # the MouseJoint of the pull held
        self.flick = None            # (node, point_world, press pixel) of a flick being aimed
        self.depth = 0.0             # the grab plane's distance from the eye along the viewing axis
        self.cursor = None           # window pixel (x, y), pyglet's origin: bottom left
        self.target = None           # the cursor's point on the grab plane (world)

    @property
    def holding(self):
        return self.joint is not None

    def release(self):
        self.joint, self.flick, self.target = None, None, None

    # --- geometry -----------------------------------------------------------------------------
    def _plane(self):
        """(point, normal) of the grab plane now, world."""
        v = self.viewer
        eye, forward = v.view.eye_world(), v.view.forward_world()
        return eye + self.depth * forward, forward

    def _cursor_point(self, x, y):
        origin, direction = self.viewer.view.world_ray(x, y)
        return on_plane(origin, direction, *self._plane())

    # --- mouse --------------------------------------------------------------------------------
    def press(self, x, y, flick):
        """Ctrl + press at (x, y): grab (flick False) or aim a flick at what is under the cursor.
        -> True if a body was taken."""
        v = self.viewer
        node, point = v.view.pick_point(x, y, reach=GRAB_REACH)
        body = None if node is None else body_of(v.session.sim, node)
        if body is None:
            what = "nothing" if node is None else f"{v.session.sim.names[node]!r} ({v.session.sim.motion[node]}, moved by no dynamic body)"
            v.session.notify(f"{'flick' if flick else 'pull'}: {what} under the cursor; only dynamic bodies can be taken")
            return False
        self.depth = float((point - v.view.eye_world()) @ v.view.forward_world())
        self.cursor = (x, y)
        if flick:
            self.flick = (body, point, (x, y))
            return True
        self.joint = MouseJoint.grab(v.session.sim, body, point)
        self.target = point
        v.session.history.mark(v.session.sim.time, f"pull: {v.session.sim.names[body]}")
        return True

    def drag(self, x, y):
        self.cursor = (x, y)
        if self.joint is not None:
            point = self._cursor_point(x, y)
            if point is not None:
                self.target = point

    def finish(self, x, y):
        """The button went up: a pull ends; a flick is given."""
        if self.flick is not None:
            body, point, (x0, y0) = self.flick
            v = self.viewer
            if abs(x - x0) + abs(y - y0) < CLICK_PIXELS:
                velocity = FLICK_SPEED * v.view.world_ray(x0, y0)[1]
            else:
                start, end = self._cursor_point(x0, y0), self._cursor_point(x, y)
                drag = np.zeros(3) if start is None or end is None else end - start
                velocity = drag / FLICK_SECONDS
                speed = float(np.linalg.norm(velocity))
                if speed > MAX_FLICK_SPEED:
                    velocity *= MAX_FLICK_SPEED / speed
            name = str(v.session.sim.names[body])
            if v.session.give_input("impulse", name, float(v.session.sim.mass[body]) * velocity, point, mark=f"flick: {name}"):
                v.session.notify(f"flicked {name}: dv = {np.linalg.norm(velocity):.3g} m/s")
        self.release()

    # --- each step ----------------------------------------------------------------------------
    def before_step(self):
        """While a pull is held: the joint's force for the coming step, as a timeline input."""
        if self.joint is None:
            return
        v = self.viewer
        if self.cursor is not None:
            self.drag(*self.cursor)     # the plane moves with the camera's frame
        force, point = self.joint.force(v.session.sim, self.target)
        if not v.session.give_input("force", str(v.session.sim.names[self.joint.node]), force, point):
            self.release()

    def overlay_lines(self, state):
        """The spring from the grabbed point to the cursor's point, and a cross there."""
        if self.joint is None or self.target is None:
            return []
        point = state["T"][self.joint.node] + state["R"][self.joint.node] @ self.joint.anchor_body
        spring = (np.array([[point, self.target]]), np.array([SPRING_COLOR]))
        return [overlays.concatenate([spring, overlays.crosses(self.target, TARGET_SIZE, SPRING_COLOR)])]
