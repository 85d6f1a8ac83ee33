# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Limits sources from configuration: Keystone unified limits, embedded."""

from placement_quota.limits import sources


def source_from_conf(conf):
    """The limits source ``[limits]`` describes, cached if ``cache_ttl``.

    Raises :class:`~placement_quota.limits.sources.SourceError` for a
    limits file that cannot be read or is malformed, and ValueError for a
    bad ``registered_limits`` value.
    """
    group = conf.limits
    if group.source == 'keystone':
        source = KeystoneLimitSource.from_conf(conf)
    else:
        registered = {}
        for resource, value in (group.registered_limits or {}).items():
            try:
                registered[resource] = int(value)
            except (TypeError, ValueError):
                raise ValueError(
                    '[limits] registered_limits: the limit of %s must be an '
                    'integer, not %r' % (resource, value)) from None
            if registered[resource] < -1:
                raise ValueError(
                    '[limits] registered_limits: the limit of %s must be at '
                    'least -1 (unlimited), not %r' % (resource, value))
        if group.limits_file:
            source = sources.EmbeddedSource.from_file(
                group.limits_file, registered_limits=registered)
        else:
            from placement_quota.limits import tree
            source = sources.EmbeddedSource(
                tree.LimitData(registered_limits=registered))
    if group.cache_ttl:
        source = sources.CachingSource(source, group.cache_ttl)
    return source


class KeystoneLimitSource(sources.LimitSource):
    """Keystone unified limits and project parents (openstacksdk)."""

    @classmethod
    def from_conf(cls, conf):
        raise NotImplementedError('KeystoneLimitSource: being written')
