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
"""``placement-quota tree check`` and ``tree show``: the project tree.

Both read the limits source of ``[limits]`` (the embedded limits file or
Keystone), or the file given with ``--limits-file``. ``tree check`` lists every
violation of the strict two-level rules of Keystone's "Strict Two-Level Limits
Enforcement Model" (exit status 0 when there is none, 1 otherwise, 2 when the
source cannot be read); ``tree show`` draws a project's tree in the spec's
notation, as text, DOT or PNG.
"""

import contextlib
import os

from cliff import command
from cliff import lister
from keystoneauth1 import exceptions as ks_exceptions
from oslo_config import cfg

from placement_quota.cmd import common
from placement_quota.cmd import main
from placement_quota.identity import projects as identity_projects
from placement_quota.limits import errors
from placement_quota.limits import render
from placement_quota.limits import sources
from placement_quota.limits import tree as tree_mod
from placement_quota.placement import client as placement_client
from placement_quota.placement import usage as placement_usage
from placement_quota import services as services_mod

CLEAN, VIOLATIONS, BAD_INPUT = 0, 1, main.BAD_INPUT

#: ``tree check`` columns, and the error attribute each one shows.
COLUMNS = (('Rule', 'rule'), ('Project', 'project_id'),
           ('Parent', 'parent_id'), ('Resource', 'resource'),
           ('Limit', 'limit'), ('Value', 'value'), ('Message', 'message'))


def _add_source_arguments(parser):
    parser.add_argument(
        '--limits-file', metavar='PATH',
        help='Read this limits file (YAML or JSON, the format of [limits] '
             'limits_file) instead of the source configured in [limits]: '
             'it is the only source, unless --with-accounts.')
    parser.add_argument(
        '--with-accounts', action='store_true',
        help='With --limits-file: lay the accounts of the admin API (in '
             'the ledger of [database] connection) over the file, as the '
             'service does with [limits] accounts.')
    parser.add_argument(
        '--usage-from', choices=('source', 'placement'), default='source',
        help='Where usage comes from: the limits source (the usage section '
             'of a limits file; none from Keystone), or Placement\'s '
             'GET /usages of each project ([placement] options; "class:VCPU" '
             'and bare resource class names, and "servers" as INSTANCE '
             'consumers). Default: source.')
    common.add_backend_arguments(parser)


def load_data(cmd, parsed_args):
    """The LimitData of the configured source (or ``--limits-file``).

    Stops the command with exit status 2 and the reason on stderr when the
    source cannot be read or holds malformed data.
    """
    conf = main.config(cmd)
    if parsed_args.limits_file:
        conf.set_override('source', 'embedded', group='limits')
        conf.set_override('limits_file', parsed_args.limits_file,
                          group='limits')
        conf.set_override('accounts', parsed_args.with_accounts,
                          group='limits')
    with reading_limits():
        data = services_mod.limits_source(conf).load()
    if getattr(parsed_args, 'usage_from', 'source') == 'placement':
        data.usage = _placement_usage(cmd, conf, data)
    return data


@contextlib.contextmanager
def reading_limits():
    """Stop the command with exit status 2 and the reason on stderr when
    the limits source cannot be read or holds malformed data."""
    try:
        yield
    except sources.SourceError as exc:
        main.fail('cannot read the limits: %s' % exc)
    except identity_projects.KeystoneNotConfigured as exc:
        main.fail('cannot read the limits from Keystone: %s' % exc)
    except ValueError as exc:
        main.fail('bad limits configuration: %s' % exc)


def unregistered_limit(conf):
    """``[limits] unregistered_resource_limit``, or exit 2 if invalid."""
    try:
        return conf.limits.unregistered_resource_limit
    except (cfg.Error, ValueError) as exc:
        main.fail('bad limits configuration: %s' % exc)


def _placement_usage(cmd, conf, data):
    """Every project's usage of every limited resource, from Placement."""
    resources = set(data.registered_limits)
    for project in data.projects.values():
        resources.update(project.limits)
    try:
        client = common.services(cmd).placement
        return placement_usage.PlacementUsage(
            client, conf.placement.max_concurrency).get_usage(
                sorted(data.projects), sorted(resources))
    except placement_client.PlacementError as exc:
        main.fail('cannot read usages from Placement: %s' % exc)
    except ks_exceptions.ClientException as exc:
        main.fail('cannot reach Placement: %s' % exc)


class TreeCheck(common.Guarded, lister.Lister):
    """Check the project tree and limits against the strict two-level rules.

    Lists every violation: depth over two, unknown parents, cycles, invalid
    limit values, a child's limit above its parent's, usage over a limit.
    Exit status 0 when there is none, 1 when there are some.
    """

    #: The openstack shell needs no Keystone for it (see
    #: placement_quota.osc.plugin: Placement uses its session on demand).
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_source_arguments(parser)
        return parser

    def take_action(self, parsed_args):
        data = load_data(self, parsed_args)
        found = tree_mod.check(
            data, unregistered_limit(main.config(self)))
        if data.model != tree_mod.STRICT_TWO_LEVEL:
            self.app.stderr.write(
                'placement-quota: note: the source\'s model is %s; these '
                'are the rules of %s.\n' % (data.model,
                                            tree_mod.STRICT_TWO_LEVEL))
        if found:
            self.app.stderr.write('%d violation%s found.\n' % (
                len(found), '' if len(found) == 1 else 's'))
        else:
            self.app.stderr.write('No violation found.\n')
        self.exit_status = VIOLATIONS if found else CLEAN
        return ([title for title, _ in COLUMNS],
                [self._row(error) for error in found])

    @staticmethod
    def _row(error):
        facts = error.as_dict()
        row = []
        for _, name in COLUMNS:
            value = facts.get(name)
            row.append('' if value is None else value)
        return row

    def run(self, parsed_args):
        self.exit_status = CLEAN
        super().run(parsed_args)
        return self.exit_status


_SUFFIXES = {'.png': 'png', '.dot': 'dot', '.gv': 'dot'}


class TreeShow(common.Guarded, command.Command):
    """Draw a project's tree with its limits and usage.

    The notation is that of Keystone's "Strict Two-Level Limits Enforcement
    Model". "A (l=20, u=4)": l the limit, u the project's own usage; a child
    without l= has the registered default. The root's line adds the usage
    of the whole tree ("tree u=20/20"); "<--" marks PROJECT and "!" what
    breaks a rule. Text by default; DOT, or a PNG drawn by Graphviz, with
    --format-tree or an --output ending in .dot or .png.
    """

    #: The openstack shell needs no Keystone for it (see
    #: placement_quota.osc.plugin: Placement uses its session on demand).
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            'project', metavar='PROJECT',
            help='ID (or unique name) of a project of the tree to show.')
        parser.add_argument(
            '--resource', action='append', dest='resources',
            metavar='RESOURCE',
            help='Resource to show; may be repeated. Default: every '
                 'resource with a registered or explicit limit, or used in '
                 'the tree.')
        parser.add_argument(
            '--format-tree', choices=('text', 'dot', 'png'),
            help='text (default), dot (Graphviz DOT), or png (needs '
                 '--output and Graphviz). Default: from the --output '
                 'suffix (.png, .dot or .gv), else text.')
        parser.add_argument(
            '--output', metavar='PATH',
            help='Write to PATH instead of stdout.')
        _add_source_arguments(parser)
        return parser

    def take_action(self, parsed_args):
        data = load_data(self, parsed_args)
        tree = tree_mod.ProjectTree.from_data(
            data, strict=False,
            unregistered_limit=unregistered_limit(main.config(self)))
        project_id = self._find(tree, data, parsed_args.project)
        resources = parsed_args.resources or self._resources(
            tree, data, project_id)
        kind = parsed_args.format_tree
        if kind is None and parsed_args.output:
            suffix = os.path.splitext(parsed_args.output)[1].lower()
            kind = _SUFFIXES.get(suffix)
        kind = kind or 'text'
        if kind == 'text':
            output = render.text(tree, project_id, resources)
        else:
            output = render.dot(tree, project_id, resources)
        if kind == 'png':
            if not parsed_args.output:
                main.fail('--format-tree png needs --output PATH.')
            try:
                render.png(output, parsed_args.output)
            except render.RenderError as exc:
                main.fail(str(exc))
        elif parsed_args.output:
            try:
                with open(parsed_args.output, 'w', encoding='utf-8') as f:
                    f.write(output)
            except OSError as exc:
                main.fail('cannot write %s: %s'
                          % (parsed_args.output, exc.strerror or exc))
        else:
            self.app.stdout.write(output)
        return 0

    @staticmethod
    def _find(tree, data, wanted):
        """The ID of the project named ``wanted`` (an ID or a name)."""
        if wanted in tree:
            return wanted
        if wanted in data.projects:
            main.fail('project %s breaks the strict two-level shape (its '
                      'parent is unknown, part of a cycle or itself a '
                      'child) and is in no tree: run "placement-quota tree '
                      'check".' % wanted)
        named = sorted(p for p in tree if tree.name(p) == wanted)
        if len(named) == 1:
            return named[0]
        if named:
            main.fail('%d projects are named %s (%s): give an ID.'
                      % (len(named), wanted, ', '.join(named)))
        main.fail(str(errors.UnknownProject(wanted)))

    @staticmethod
    def _resources(tree, data, project_id):
        names = set(tree.resources())
        for member in tree.family(project_id):
            names.update(data.usage.get(member) or ())
        return sorted(names)
