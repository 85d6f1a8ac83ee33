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
"""Configuration that would silently do nothing, said at start.

Two mistakes leave a cloud unprotected without a word:

* an option set for a filter that is not in ``[enforcement]
  enabled_filters`` (``max_leases_per_project = 1`` without
  LeaseCountFilter): :func:`unused_options`;
* an enabled filter that, as configured, can never deny a lease
  (ExternalServiceFilter without an endpoint, a limit filter whose limits
  are all 0): :func:`inert_filters`, from each filter's ``inert()``.

``serve``, ``listen`` and ``check`` warn about each (``--strict-config``
makes them errors); :func:`summary` is what the start banner says the
chain enforces.
"""

from oslo_config import cfg

#: Option groups that only a filter reads, beyond its ``enforcement_opts``
#: (``[enforcement_external]``: ExternalServiceFilter's).
FILTER_GROUPS = {'enforcement_external': 'ExternalServiceFilter'}

#: What the banner says of a chain without filters.
NO_FILTER = 'none (every lease is allowed)'


def owners(available):
    """``{(group, option): {filter names that read it}}`` of the
    ``available`` filter classes (``{name: class}``)."""
    found = {}
    for name, cls in available.items():
        for opt in getattr(cls, 'enforcement_opts', []):
            found.setdefault(('enforcement', opt.dest), set()).add(name)
    return found


def is_set(conf, group, option):
    """Whether the operator set ``[group] option`` (a configuration file,
    the command line or the environment), whatever its value."""
    try:
        location = conf.get_location(option, group)
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
        return False
    return location is not None and location.location.is_user_controlled


def _group_options(conf, group):
    if group not in conf:
        return []
    return list(conf[group])


def unused_options(conf, available, enabled):
    """``[(group, option, reader names)]``: each option set in ``conf``
    that only filters not in ``enabled`` (names) read."""
    enabled = set(enabled)
    found = []
    for (group, option), names in sorted(owners(available).items()):
        if names & enabled or not is_set(conf, group, option):
            continue
        found.append((group, option, sorted(names)))
    for group, name in sorted(FILTER_GROUPS.items()):
        if name in enabled or name not in available:
            continue
        for option in sorted(_group_options(conf, group)):
            if is_set(conf, group, option):
                found.append((group, option, [name]))
    return found


def inert_filters(filters):
    """``[(filter name, why)]`` of the enabled ``filters`` that can never
    deny a lease as configured."""
    found = []
    for filter_ in filters:
        why = getattr(filter_, 'inert', lambda: None)()
        if why:
            found.append((filter_.name, why))
    return found


def option_warnings(conf, available, enabled):
    """One sentence per option set for a filter not in ``enabled``
    (names)."""
    return [
        '[%s] %s is set, but %s, the filter that reads it, is not in '
        '[enforcement] enabled_filters (%s): the option does nothing.'
        % (group, option, ' or '.join(readers),
           ', '.join(enabled) or 'empty')
        for group, option, readers in unused_options(conf, available,
                                                     enabled)]


def warnings(conf, available, filters):
    """One sentence per option that does nothing and per enabled filter
    that cannot act, for the start of a command."""
    lines = option_warnings(conf, available, [f.name for f in filters])
    inert = inert_filters(filters)
    for name, why in inert:
        lines.append('Enforcement filter %s is enabled but can never deny '
                     'a lease: %s.' % (name, why))
    if filters and len(inert) == len(filters):
        lines.append('No enabled enforcement filter can deny a lease: the '
                     'chain allows everything.')
    return lines


def summary(filters):
    """What the chain enforces, for the start banner: each filter's name,
    and ``(inert)`` after one that can never deny."""
    if not filters:
        return NO_FILTER
    inert = {name for name, _ in inert_filters(filters)}
    text = ', '.join('%s%s' % (f.name, ' (inert)' if f.name in inert else '')
                     for f in filters)
    if len(inert) == len(filters):
        text += ' -- nothing is enforced'
    return text
