"""Keystone adapter: projects, hierarchy, limits."""
