"""Contacts: broad phase, narrow phase (box-box, GJK/EPA, closest points) and persistent manifolds."""
