"""Each choice-valued setting is one enumeration (physics.core.choices): every place that offers or
checks it — Settings, the runner's and the app's command lines, the kernels' entry points — offers
exactly its names and refuses anything else naming the key and the value."""
import argparse

import numpy as np
import pytest

from physics.core import choices
from physics.__main__ import build_parser
from physics.dynamics.integrators import INTEGRATORS, step_bodies
from physics.dynamics.kinematics import step_kinematic
from physics.core.settings import SettingError, Settings
from app.__main__ import parse_args

CHOICES = [choices.GYROSCOPIC, choices.INTEGRATOR, choices.ROTATION_UPDATE, choices.EXPONENTIAL]


def offered(parser, option):
    """The choices an argparse parser (or one of its subparsers) gives `option` (None: any value)."""
    for action in parser._actions:
        if option in action.option_strings:
            return None if action.choices is None else tuple(action.choices)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                if any(option in a.option_strings for a in sub._actions):
                    return offered(sub, option)
    raise AssertionError(f"no option {option}")


@pytest.mark.parametrize("choice", CHOICES, ids=lambda c: c.key)
def test_settings_take_every_name_and_refuse_others_by_key(choice):
    settings = Settings()
    for name in choice.names:
        settings.set(choice.key, name)
        assert getattr(settings, choice.key) == name
    with pytest.raises(SettingError, match=f"setting '{choice.key}': got 'nope'; {choice.expected}"):
        settings.set(choice.key, "nope")
    assert len(set(choice.codes.values())) == len(choice.names)     # a code per name


@pytest.mark.parametrize("choice", CHOICES, ids=lambda c: c.key)
def test_both_command_lines_offer_exactly_the_names(choice):
    """The runner's --integrator takes any NAME (its help lists them from physics.core.choices) and lets
    Settings refuse a bad one (tests/test_runner.py); the others list the names themselves."""
    option = "--" + choice.key.replace("_", "-")
    assert offered(build_parser(), option) in (choice.names, None if choice is choices.INTEGRATOR else ())
    with pytest.raises(SystemExit):
        parse_args([option, "nope"])
    assert getattr(parse_args([option, choice.names[-1]]), choice.key) == choice.names[-1]


def test_the_kernels_entry_points_refuse_unknown_names_by_key():
    assert tuple(INTEGRATORS) == choices.INTEGRATOR.names
    one = lambda *shape: np.zeros((1, *shape))
    body = (one(3), np.eye(3)[None].copy(), one(3), one(3), np.ones(1), np.ones((1, 3)), one(3), one(3))
    with pytest.raises(ValueError, match="integrator: got 'nope'; expected one of explicit-euler"):
        step_bodies(*body, 0.1, integrator="nope")
    with pytest.raises(ValueError, match="gyroscopic: got 'nope'; expected one of off, explicit, implicit"):
        step_bodies(*body, 0.1, gyroscopic="nope")
    with pytest.raises(ValueError, match="rotation_update: got 'magnus9'; expected one of magnus1"):
        step_kinematic(one(3), np.eye(3)[None].copy(), one(3), one(3), one(3), one(3), 0.1, rotation_update="magnus9")


def test_every_choice_the_panel_lists_has_its_plain_sentence():
    """The panel's combos show each option's one-line meaning over it (app.panel.setting_widget):
    every option of every choice has one, and each integrator's says its order and what it keeps,
    loses or costs."""
    from physics.core import choices

    for choice in (choices.GYROSCOPIC, choices.INTEGRATOR, choices.ROTATION_UPDATE, choices.EXPONENTIAL):
        assert all(isinstance(text, str) and len(text) > 10 for text in choice.meanings.values()), choice.key
    for name, text in choices.INTEGRATOR.meanings.items():
        assert any(order in text for order in ("1st order", "2nd order", "4th order")), name
        assert ":" in text and len(text) > 60, name     # the what, then what it keeps, loses and costs
