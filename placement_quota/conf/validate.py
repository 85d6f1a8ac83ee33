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
"""Unknown sections and options in the configuration files.

oslo.config ignores what no code registered, so a misspelled section
(``[placment]``) or option silently leaves the default in place. This
compares what the parsed files hold with the options known: first those
registered on the ``ConfigOpts`` (cheap); only when something is left over,
every option of the namespaces of the sample configuration -- oslo.config's
validator machinery (``oslo-config-validator``), which loads them through
the generator's entry points (about two seconds) -- and the options of the
keystoneauth plugin each section names in ``auth_type``.
"""

import collections
import glob
import os
import warnings

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

#: The ``oslo.config.opts`` namespaces of the sample configuration
#: (etc/placement-quota/placement-quota-config-generator.conf).
NAMESPACES = ('placement_quota', 'placement_quota.filters',
              'keystonemiddleware.auth_token', 'oslo.log', 'oslo.messaging',
              'oslo.policy')

#: One finding: ``option`` is None when the whole section is unknown.
Unknown = collections.namedtuple('Unknown', 'path section option')


def describe(unknown):
    """``FILE: [section] option is not a known option`` (or section)."""
    if unknown.option is None:
        return '%s: [%s] is not a known section' % (unknown.path,
                                                    unknown.section)
    return '%s: [%s] %s is not a known option' % (
        unknown.path, unknown.section, unknown.option)


def config_files(conf):
    """The files ``conf`` read: ``--config-file`` (or the default ones
    found) then the ``*.conf`` of each ``--config-dir``."""
    files = list(conf.config_file or ())
    dirs = conf.config_dir or ()
    if isinstance(dirs, str):
        dirs = [dirs]
    for directory in dirs:
        files.extend(sorted(glob.glob(os.path.join(directory, '*.conf'))))
    return [path for path in files if os.path.isfile(path)]


def _parse(path):
    sections = {}
    cfg.ConfigParser(path, sections).parse()
    return sections


def _names(opt):
    names = {opt.dest, opt.name, opt.name.replace('-', '_')}
    for deprecated in getattr(opt, 'deprecated_opts', None) or ():
        if deprecated.name:
            names.add(deprecated.name)
            names.add(deprecated.name.replace('-', '_'))
    return names


def _add(known, group, opts):
    for opt in opts:
        known[group].update(_names(opt))
        for deprecated in getattr(opt, 'deprecated_opts', None) or ():
            if deprecated.group and deprecated.group != group:
                known[deprecated.group].update(
                    {deprecated.name or opt.dest, opt.dest})


def _registered(conf):
    """``{section: option names}`` of what ``conf`` registered."""
    known = collections.defaultdict(set)
    # oslo.config has no public way to list the Opt objects, which the
    # deprecated names need.
    _add(known, 'DEFAULT', [info['opt'] for info in conf._opts.values()])
    for name, group in conf._groups.items():
        _add(known, name, [info['opt'] for info in group._opts.values()])
    return known


def _generator(namespaces):
    """``{section: option names}`` of every option of ``namespaces``."""
    from oslo_config import generator

    known = collections.defaultdict(set)
    with warnings.catch_warnings():
        # Loading every library's options imports oslo.messaging, whose
        # oslo.service backend warns about eventlet on stderr.
        warnings.simplefilter('ignore')
        listed = generator._list_opts(list(namespaces))
    for _, groups in listed:
        for group, opts in groups:
            name = getattr(group, 'name', group) or 'DEFAULT'
            _add(known, name, opts)
    return known


def _auth_plugin_options(sections):
    """The options of the keystoneauth plugin of each section that names
    one (``auth_type``); a plugin that does not load adds none (the
    command that uses the section says why)."""
    known = collections.defaultdict(set)
    for section, options in sections.items():
        values = options.get('auth_type') or options.get('auth_plugin')
        if not values:
            continue
        try:
            opts = ks_loading.get_auth_plugin_conf_options(values[-1])
        except Exception:   # any failure to load the plugin: not ours
            continue
        _add(known, section, opts)
    return known


def _left(parsed, knowns, plugins):
    """What no ``knowns`` holds; ``plugins`` (auth plugin options) make
    options known, never a section."""
    found = []
    for path, sections in parsed:
        for section, options in sections.items():
            if section != 'DEFAULT' and not any(section in k
                                                for k in knowns):
                found.append(Unknown(path, section, None))
                continue
            names = set(plugins.get(section, ()))
            for known in knowns:
                names.update(known.get(section, ()))
            for option in options:
                if option not in names and \
                        option.replace('-', '_') not in names:
                    found.append(Unknown(path, section, option))
    return found


def unknown(conf, namespaces=NAMESPACES):
    """Every :class:`Unknown` section and option of the files ``conf``
    read, in file order.

    A file that cannot be parsed is left to oslo.config, which reports it
    when it reads the file.
    """
    parsed = []
    for path in config_files(conf):
        try:
            parsed.append((path, _parse(path)))
        except (OSError, cfg.ParseError):
            continue
    plugins = collections.defaultdict(set)
    for _, sections in parsed:
        for section, options in _auth_plugin_options(sections).items():
            plugins[section].update(options)
    knowns = [_registered(conf)]
    if not _left(parsed, knowns, plugins):
        return []
    knowns.append(_generator(namespaces))
    return _left(parsed, knowns, plugins)
