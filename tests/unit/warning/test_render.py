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
"""The words of every kind of warning: what it is about, the numbers,
what the user can do; operators' templates replace ours file by file and
are checked when the renderer is made."""

import logging
import os

import fixtures
from oslo_config import cfg
import testtools

from placement_quota.conf import warnings as warnings_conf
from placement_quota.warning import model
from placement_quota.warning import render

LEASE = {'lease_row': 3, 'start_date': '2026-11-27T14:00:00Z',
         'end_date': '2026-11-29T14:00:00Z'}

#: A notice of every kind, with all its facts.
SAMPLES = {
    model.LEASE_END: model.Notice(
        model.LEASE_END, 'lease_end:3:2026-11-29T14:00:00Z:172800',
        'project-a', 'user-a', 'lease-1', 'training-run',
        facts=dict(LEASE, lead_s=172800,
                   latest_end_date='2026-12-01T09:30:00Z',
                   bound_by='MaxLeaseDurationFilter',
                   extension_message='a lease may last 4 days at most')),
    model.BEFORE_END: model.Notice(
        model.BEFORE_END, 'before_end:3:2026-11-29T14:00:00Z',
        'project-a', 'user-a', 'lease-1', 'training-run', facts=LEASE),
    model.CREDITS: model.Notice(
        model.CREDITS, 'credits:7:90', 'project-a',
        facts={'allocation_id': 7, 'resource_class': None,
               'threshold_pct': 90.0, 'used_pct': 91.25, 'amount': 1000.0,
               'spent': 912.5, 'left': 87.5, 'not_started': 40.0,
               'allocation_end': '2027-01-01T00:00:00Z'}),
    model.USER_CREDITS: model.Notice(
        model.USER_CREDITS, 'user_credits:4:75', 'project-a', 'user-a',
        facts={'share': 200.0, 'spent': 151.0, 'left': 49.0,
               'threshold_pct': 75.0, 'used_pct': 75.5}),
    model.ALLOCATION_END: model.Notice(
        model.ALLOCATION_END, 'allocation_end:7:2027-01-01T00:00:00Z:604800',
        'project-a',
        facts={'allocation_id': 7, 'resource_class': None,
               'end_date': '2027-01-01T00:00:00Z', 'lead_s': 604800,
               'amount': 1000.0, 'left': 87.5}),
    model.IDLE: model.Notice(
        model.IDLE, 'idle:3', 'project-a', 'user-a', 'lease-1',
        'training-run',
        facts=dict(LEASE, idle_since='2026-11-27T14:00:00Z',
                   hosts=['compute-1', 'compute-2'], credits_at_stake=96.0,
                   ends_at='2026-11-28T14:00:00Z')),
    model.IDLE_ENDED: model.Notice(
        model.IDLE_ENDED, 'idle_ended:3', 'project-a', 'user-a', 'lease-1',
        'training-run',
        facts=dict(LEASE, idle_since='2026-11-27T14:00:00Z',
                   hosts=['compute-1'], ended_at='2026-11-28T14:00:00Z',
                   refunded=24.0)),
}


def new_conf(**overrides):
    conf = cfg.ConfigOpts()
    warnings_conf.register_opts(conf)
    conf([])
    for name, value in overrides.items():
        conf.set_override(name, value, 'warnings')
    return conf


def with_facts(kind, **facts):
    notice = SAMPLES[kind]
    return model.Notice(**dict(vars(notice),
                               facts=dict(notice.facts, **facts)))


def without_facts(kind, *names):
    notice = SAMPLES[kind]
    return model.Notice(**dict(vars(notice), facts={
        k: v for k, v in notice.facts.items() if k not in names}))


class RenderTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.renderer = render.Renderer(new_conf())

    def text(self, notice):
        return ' '.join(self.renderer.render(notice).text.split())


class TestEveryKind(RenderTestCase):

    def test_every_kind_has_a_sample(self):
        self.assertEqual(set(model.KINDS), set(SAMPLES))

    def test_every_kind_renders_a_one_line_subject(self):
        for kind, notice in SAMPLES.items():
            subject = self.renderer.render(notice).subject
            self.assertTrue(subject, kind)
            self.assertNotIn('\n', subject, kind)

    def test_every_kind_renders_a_text_part_without_placeholders_left(self):
        for kind, notice in SAMPLES.items():
            self.assertNotIn('$', self.renderer.render(notice).text, kind)

    def test_every_kind_renders_an_html_document(self):
        for kind, notice in SAMPLES.items():
            markup = self.renderer.render(notice).html
            self.assertTrue(markup.startswith('<!DOCTYPE html>'), kind)
            self.assertIn('</html>', markup, kind)
            self.assertNotIn('$', markup, kind)

    def test_every_kind_gives_every_placeholder_it_lists(self):
        for kind, notice in SAMPLES.items():
            self.assertEqual(set(render.PLACEHOLDERS[kind]),
                             set(render.values(notice)), kind)

    def test_every_kind_renders_without_any_fact(self):
        for kind, notice in SAMPLES.items():
            bare = model.Notice(**dict(vars(notice), facts={}))
            self.assertTrue(self.renderer.render(bare).text, kind)

    def test_every_lease_kind_names_the_lease_in_its_subject(self):
        for kind in (model.LEASE_END, model.BEFORE_END, model.IDLE,
                     model.IDLE_ENDED):
            self.assertIn('training-run',
                          self.renderer.render(SAMPLES[kind]).subject, kind)

    def test_every_project_kind_names_the_project_in_its_subject(self):
        for kind in (model.CREDITS, model.USER_CREDITS,
                     model.ALLOCATION_END):
            self.assertIn('project-a',
                          self.renderer.render(SAMPLES[kind]).subject, kind)

    def test_a_lease_without_a_name_is_named_by_its_id(self):
        notice = model.Notice(**dict(vars(SAMPLES[model.LEASE_END]),
                                     lease_name=None))
        self.assertIn('lease-1', self.renderer.render(notice).subject)

    def test_an_unknown_kind_is_refused_naming_it(self):
        notice = model.Notice('holiday', 'holiday:1', 'project-a')
        error = self.assertRaises(ValueError, self.renderer.render, notice)
        self.assertIn("'holiday'", str(error))


class TestValues(testtools.TestCase):

    def test_dates_read_as_utc_to_the_minute(self):
        self.assertEqual('2026-11-29 14:00 UTC',
                         render.date('2026-11-29T14:00:59Z'))

    def test_a_missing_date_is_empty(self):
        self.assertEqual('', render.date(None))

    def test_credits_have_two_decimals_and_thousands_separators(self):
        self.assertEqual('1,234.50', render.number(1234.5))

    def test_a_whole_percentage_has_no_decimals(self):
        self.assertEqual('90%', render.percent(90.0))

    def test_a_percentage_has_one_decimal_at_most(self):
        self.assertEqual('91.2%', render.percent(91.25))

    def test_lead_times_under_three_days_read_in_hours(self):
        self.assertEqual('48 hours', render.duration(172800))

    def test_lead_times_of_three_days_or_more_read_in_days(self):
        self.assertEqual('7 days', render.duration(604800))

    def test_one_hour_is_singular(self):
        self.assertEqual('1 hour', render.duration(3600))

    def test_odd_durations_read_in_minutes(self):
        self.assertEqual('90 minutes', render.duration(5400))


class TestLeaseEnd(RenderTestCase):

    def test_names_the_lease_its_end_and_its_start(self):
        text = self.text(SAMPLES[model.LEASE_END])
        self.assertIn('Your lease training-run (ID lease-1, project '
                      'project-a) ends on 2026-11-29 14:00 UTC', text)
        self.assertIn('started on 2026-11-27 14:00 UTC', text)

    def test_offers_the_extension_up_to_the_latest_end_date(self):
        text = self.text(SAMPLES[model.LEASE_END])
        self.assertIn('You can extend it now up to 2026-12-01 09:30 UTC',
                      text)
        self.assertIn('openstack reservation lease update --end-date '
                      '"2026-12-01 09:30" lease-1', text)

    def test_names_the_filter_refusing_a_later_end_and_its_reason(self):
        self.assertIn('(MaxLeaseDurationFilter: a lease may last 4 days at '
                      'most)', self.text(SAMPLES[model.LEASE_END]))

    def test_without_the_extension_query_says_how_to_ask(self):
        notice = without_facts(model.LEASE_END, 'latest_end_date',
                               'bound_by', 'extension_message')
        text = self.text(notice)
        self.assertIn('openstack reservation lease extension lease-1', text)
        self.assertNotIn('You can extend it now', text)

    def test_a_lease_that_cannot_be_extended_is_told_so(self):
        notice = with_facts(model.LEASE_END,
                            latest_end_date='2026-11-29T14:00:00Z')
        self.assertIn('It cannot be extended now (MaxLeaseDurationFilter',
                      self.text(notice))

    def test_an_extension_no_filter_bounds_names_none(self):
        notice = with_facts(model.LEASE_END, bound_by=None,
                            extension_message=None)
        text = self.text(notice)
        self.assertIn('You can extend it now up to 2026-12-01 09:30 UTC:',
                      text)
        self.assertNotIn('refused', text)

    def test_says_that_instances_are_deleted_at_the_end(self):
        self.assertIn('instances running on them are deleted',
                      self.text(SAMPLES[model.LEASE_END]))

    def test_before_end_says_how_to_ask_for_an_extension(self):
        self.assertIn('openstack reservation lease extension lease-1',
                      self.text(SAMPLES[model.BEFORE_END]))


class TestCredits(RenderTestCase):

    def test_subject_gives_the_percentage_used(self):
        self.assertEqual('Project project-a has used 91.2% of its credits',
                         self.renderer.render(SAMPLES[model.CREDITS]).subject)

    def test_gives_allocated_spent_and_left_with_two_decimals(self):
        text = self.text(SAMPLES[model.CREDITS])
        self.assertIn('Allocated: 1,000.00 credits', text)
        self.assertIn('Spent: 912.50 credits', text)
        self.assertIn('Left: 87.50 credits', text)

    def test_says_what_is_charged_for_leases_not_started(self):
        self.assertIn('40.00 credits are charged for leases that have not '
                      'started yet', self.text(SAMPLES[model.CREDITS]))

    def test_says_nothing_of_leases_not_started_when_there_are_none(self):
        notice = with_facts(model.CREDITS, not_started=0)
        self.assertNotIn('not started', self.text(notice))

    def test_below_100_percent_says_how_to_make_them_last(self):
        text = self.text(SAMPLES[model.CREDITS])
        self.assertIn('ask the cloud\'s operators for more credits', text)
        self.assertIn('When they are spent, new leases', text)

    def test_at_100_percent_says_new_leases_are_refused(self):
        notice = with_facts(model.CREDITS, used_pct=100.0, left=0.0)
        self.assertIn('Its credits are spent: new leases charged to it are '
                      'refused', self.text(notice))

    def test_a_credit_pool_counts_resource_hours(self):
        notice = with_facts(model.CREDITS, resource_class='VGPU',
                            not_started=None)
        self.assertIn('Left: 87.50 VGPU-hours', self.text(notice))

    def test_an_allocation_without_end_says_so(self):
        notice = with_facts(model.CREDITS, allocation_end=None)
        self.assertIn('Ends: no end date', self.text(notice))

    def test_a_users_share_says_to_ask_the_project_managers(self):
        text = self.text(SAMPLES[model.USER_CREDITS])
        self.assertIn('You have used 75.5% of your share', text)
        self.assertIn('Left: 49.00 credits', text)
        self.assertIn('Ask your project\'s managers for a larger share',
                      text)

    def test_allocation_end_gives_the_date_and_what_is_left(self):
        text = self.text(SAMPLES[model.ALLOCATION_END])
        self.assertIn('Allocation 7 of project project-a ends on '
                      '2027-01-01 00:00 UTC', text)
        self.assertIn('Left: 87.50 credits', text)
        self.assertIn('Ask the cloud\'s operators for a new allocation',
                      text)


class TestIdle(RenderTestCase):

    def test_names_the_hosts_and_since_when(self):
        text = self.text(SAMPLES[model.IDLE])
        self.assertIn('Hosts: compute-1, compute-2', text)
        self.assertIn('since 2026-11-27 14:00 UTC', text)
        self.assertIn('Credits at stake: 96.00 credits', text)

    def test_says_how_to_end_the_lease(self):
        self.assertIn('openstack reservation lease delete lease-1',
                      self.text(SAMPLES[model.IDLE]))

    def test_says_when_it_will_be_ended_when_it_will(self):
        self.assertIn('the lease will be ended then',
                      self.text(SAMPLES[model.IDLE]))
        self.assertIn('2026-11-28 14:00 UTC', self.text(SAMPLES[model.IDLE]))

    def test_says_nothing_of_an_end_when_none_is_planned(self):
        notice = with_facts(model.IDLE, ends_at=None)
        self.assertNotIn('will be ended', self.text(notice))

    def test_an_ended_lease_says_when_and_what_was_refunded(self):
        text = self.text(SAMPLES[model.IDLE_ENDED])
        self.assertIn('was ended on 2026-11-28 14:00 UTC', text)
        self.assertIn('Refunded: 24.00 credits', text)


class TestEscaping(RenderTestCase):

    def setUp(self):
        super().setUp()
        self.notice = model.Notice(**dict(
            vars(SAMPLES[model.IDLE]), lease_name='<b>mine</b> & "yours"'))

    def test_html_part_escapes_every_value(self):
        markup = self.renderer.render(self.notice).html
        self.assertIn('&lt;b&gt;mine&lt;/b&gt; &amp; &quot;yours&quot;',
                      markup)
        self.assertNotIn('<b>mine', markup)

    def test_text_part_keeps_values_as_they_are(self):
        self.assertIn('<b>mine</b> & "yours"',
                      self.renderer.render(self.notice).text)

    def test_subject_stays_one_line_with_a_newline_in_a_value(self):
        notice = model.Notice(**dict(vars(SAMPLES[model.IDLE]),
                                     lease_name='two\nlines'))
        self.assertEqual('Your lease two lines is reserved but unused',
                         self.renderer.render(notice).subject)


class TestOperatorTemplates(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def write(self, name, text, mode='w'):
        path = os.path.join(self.dir, name)
        with open(path, mode) as f:
            f.write(text)
        return path

    def renderer(self):
        return render.Renderer(new_conf(template_dir=self.dir))

    def test_an_operator_file_replaces_the_built_in_one(self):
        self.write('lease_end.subject', '[Cloud] $lease_name: $end_date\n')
        self.assertEqual(
            '[Cloud] training-run: 2026-11-29 14:00 UTC',
            self.renderer().render(SAMPLES[model.LEASE_END]).subject)

    def test_the_other_files_stay_built_in(self):
        self.write('lease_end.subject', '[Cloud] $lease_name\n')
        rendered = self.renderer().render(SAMPLES[model.LEASE_END])
        self.assertIn('You can extend it now', rendered.text)
        self.assertEqual(
            'Project project-a has used 91.2% of its credits',
            self.renderer().render(SAMPLES[model.CREDITS]).subject)

    def test_an_unknown_placeholder_is_refused_naming_file_and_name(self):
        path = self.write('credits.txt', 'Spent: $spent of $budget\n')
        error = self.assertRaises(ValueError, self.renderer)
        self.assertIn(path, str(error))
        self.assertIn('$budget', str(error))

    def test_a_placeholder_of_another_kind_is_refused(self):
        self.write('credits.txt', 'Lease $lease_name\n')
        error = self.assertRaises(ValueError, self.renderer)
        self.assertIn('unknown placeholder $lease_name', str(error))

    def test_a_dollar_starting_no_placeholder_is_refused_with_its_line(self):
        path = self.write('idle.html', '<p>Hello</p>\n<p>Costs $5</p>\n')
        error = self.assertRaises(ValueError, self.renderer)
        self.assertIn('Template %s, line 2' % path, str(error))

    def test_a_double_dollar_is_a_dollar_sign(self):
        self.write('idle.subject', 'Costs $$5: $lease_name\n')
        self.assertEqual('Costs $5: training-run',
                         self.renderer().render(SAMPLES[model.IDLE]).subject)

    def test_a_file_that_is_not_utf8_is_refused_naming_it(self):
        path = self.write('idle.txt', b'caf\xe9 $lease_name\n', 'wb')
        error = self.assertRaises(ValueError, self.renderer)
        self.assertIn('Template %s cannot be read' % path, str(error))

    def test_an_unreadable_file_is_refused_naming_it(self):
        path = os.path.join(self.dir, 'idle.txt')
        os.mkdir(path)
        error = self.assertRaises(ValueError, self.renderer)
        self.assertIn('Template %s cannot be read' % path, str(error))

    def test_a_missing_directory_is_refused_naming_the_option(self):
        missing = os.path.join(self.dir, 'missing')
        error = self.assertRaises(
            ValueError, render.Renderer, new_conf(template_dir=missing))
        self.assertIn('[warnings] template_dir %r' % missing, str(error))

    def test_a_file_that_is_no_template_is_logged(self):
        logs = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        self.write('lease-end.txt', 'Hello\n')
        self.renderer()
        self.assertIn('ignored: lease-end.txt', logs.output)

    def test_the_built_in_templates_are_all_there(self):
        for kind in model.KINDS:
            for part in render.PARTS:
                self.assertTrue(os.path.isfile(os.path.join(
                    render.TEMPLATE_DIR, '%s.%s' % (kind, part))))
