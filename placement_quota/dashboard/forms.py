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
"""The quote form: a lease as blazar-dashboard's create form would make
it, priced and checked by the API before it is created.

The form checks only what a browser cannot send wrong by itself (that a
number is a whole number); every other rule is the API's, whose 400
answer is shown next to the field it names.
"""

from django import forms as django_forms
from django.utils.translation import gettext_lazy as _
from horizon import forms

HOSTS = 'physical:host'
INSTANCES = 'virtual:instance'

#: The fields of the lease body each form field fills, by the name the
#: API gives in a 400 answer (``reservations[0].min``: the first
#: reservation's ``min``).
PAYLOAD_FIELDS = {
    'name': 'name',
    'start_date': 'start_date',
    'end_date': 'end_date',
    'reservations[0].resource_type': 'resource_type',
    'reservations[0].min': 'min_hosts',
    'reservations[0].max': 'max_hosts',
    'reservations[0].hypervisor_properties': 'hypervisor_properties',
    'reservations[0].resource_properties': 'resource_properties',
    'reservations[0].amount': 'amount',
    'reservations[0].vcpus': 'vcpus',
    'reservations[0].memory_mb': 'memory_mb',
    'reservations[0].disk_gb': 'disk_gb',
}


def form_field(payload_field):
    """The form field of the payload field a 400 answer names, or None.

    The API may name the field of the body (``end_date``), of the lease
    (``lease.end_date``) or go deeper than the form does
    (``reservations[0].min.x``): the longest known prefix wins.
    """
    if not payload_field:
        return None
    name = payload_field
    for prefix in ('body.', 'lease.'):
        if name.startswith(prefix):
            name = name[len(prefix):]
    name = name.replace('reservations.0.', 'reservations[0].')
    best = None
    for known in PAYLOAD_FIELDS:
        if (name == known or name.startswith(known + '.') or
                name.startswith(known + '[')) and (
                best is None or len(known) > len(best)):
            best = known
    return PAYLOAD_FIELDS[best] if best else None


class QuoteForm(forms.Form):
    name = forms.CharField(
        label=_('Lease name'), max_length=255,
        help_text=_('The name the lease will have in Blazar.'))
    start_date = forms.CharField(
        label=_('Start (UTC)'), initial='now', max_length=32,
        help_text=_('YYYY-MM-DD HH:MM in UTC, or now.'))
    end_date = forms.CharField(
        label=_('End (UTC)'), max_length=32,
        help_text=_('YYYY-MM-DD HH:MM in UTC.'))
    resource_type = forms.ThemableChoiceField(
        label=_('Resource type'),
        choices=[(HOSTS, _('Physical hosts')),
                 (INSTANCES, _('Instances'))],
        widget=forms.ThemableSelectWidget(attrs={
            'class': 'switchable', 'data-slug': 'resource_type'}))
    min_hosts = forms.IntegerField(
        label=_('Minimum number of hosts'), required=False, initial=1,
        widget=django_forms.NumberInput(attrs={
            'class': 'switched', 'data-switch-on': 'resource_type',
            'data-resource_type-physical:host':
                _('Minimum number of hosts')}))
    max_hosts = forms.IntegerField(
        label=_('Maximum number of hosts'), required=False, initial=1,
        widget=django_forms.NumberInput(attrs={
            'class': 'switched', 'data-switch-on': 'resource_type',
            'data-resource_type-physical:host':
                _('Maximum number of hosts')}))
    hypervisor_properties = forms.CharField(
        label=_('Hypervisor properties'), required=False,
        # Horizon puts a help text in an HTML attribute as it is:
        # its quotes are entities.
        help_text=_('Blazar\'s hypervisor_properties: a JSON filter on '
                    'the hosts\' hypervisors, e.g. [&quot;&gt;=&quot;, '
                    '&quot;$vcpus&quot;, &quot;4&quot;]. Empty: any.'),
        widget=forms.TextInput(attrs={
            'class': 'switched', 'data-switch-on': 'resource_type',
            'data-resource_type-physical:host': _('Hypervisor properties')}))
    resource_properties = forms.CharField(
        label=_('Resource properties'), required=False,
        help_text=_('Blazar\'s resource_properties: a JSON filter on '
                    'the extra capabilities, e.g. [&quot;==&quot;, '
                    '&quot;$node_type&quot;, &quot;compute&quot;]. Empty: '
                    'any.'),
        widget=forms.TextInput(attrs={
            'class': 'switched', 'data-switch-on': 'resource_type',
            'data-resource_type-physical:host': _('Resource properties'),
            'data-resource_type-virtual:instance':
                _('Resource properties')}))
    amount = forms.IntegerField(
        label=_('Number of instances'), required=False, initial=1,
        widget=django_forms.NumberInput(attrs={
            'class': 'switched', 'data-switch-on': 'resource_type',
            'data-resource_type-virtual:instance':
                _('Number of instances')}))
    vcpus = forms.IntegerField(
        label=_('vCPUs per instance'), required=False, initial=1,
        widget=django_forms.NumberInput(attrs={
            'class': 'switched', 'data-switch-on': 'resource_type',
            'data-resource_type-virtual:instance':
                _('vCPUs per instance')}))
    memory_mb = forms.IntegerField(
        label=_('RAM per instance (MB)'), required=False, initial=1024,
        widget=django_forms.NumberInput(attrs={
            'class': 'switched', 'data-switch-on': 'resource_type',
            'data-resource_type-virtual:instance':
                _('RAM per instance (MB)')}))
    disk_gb = forms.IntegerField(
        label=_('Disk per instance (GB)'), required=False, initial=10,
        widget=django_forms.NumberInput(attrs={
            'class': 'switched', 'data-switch-on': 'resource_type',
            'data-resource_type-virtual:instance':
                _('Disk per instance (GB)')}))

    def lease(self):
        """Blazar's ``POST /v1/leases`` body of the cleaned form."""
        data = self.cleaned_data
        if data['resource_type'] == INSTANCES:
            reservation = {
                'resource_type': INSTANCES,
                'amount': data.get('amount'),
                'vcpus': data.get('vcpus'),
                'memory_mb': data.get('memory_mb'),
                'disk_gb': data.get('disk_gb'),
                'affinity': None,
                'resource_properties': data.get('resource_properties') or '',
            }
        else:
            reservation = {
                'resource_type': HOSTS,
                'min': data.get('min_hosts'),
                'max': data.get('max_hosts'),
                'hypervisor_properties':
                    data.get('hypervisor_properties') or '',
                'resource_properties': data.get('resource_properties') or '',
            }
        return {'name': data['name'],
                'start_date': data['start_date'].strip(),
                'end_date': data['end_date'].strip(),
                'reservations': [reservation],
                'events': []}

    def add_api_error(self, error):
        """Show the API's 400 message next to the field it names (or
        above the form when it names none of the form's)."""
        self.add_error(form_field(error.field), error.message)
