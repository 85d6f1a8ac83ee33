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
"""The panel's pages: the overview (limits, credits, leases, usage) and
the quote form.

The API is called with the user's token (:mod:`client`); what it
refuses or cannot answer is shown as an error message on the page,
never as a traceback.
"""

import datetime

from django.contrib import messages
from django.utils.translation import gettext_lazy as _
from horizon import views

from placement_quota.dashboard import client
from placement_quota.dashboard import forms
from placement_quota.dashboard import present


def _fetch(request, call, what):
    """``call(request)``, or None after an error message naming ``what``
    and the API's message."""
    try:
        return call(request)
    except client.ApiError as exc:
        messages.error(request, _('Could not read %(what)s: %(message)s')
                       % {'what': what, 'message': exc.message})
        return None


class IndexView(views.HorizonTemplateView):
    template_name = 'reservation_quota/index.html'
    page_title = _('Quota and Credits')

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        request = self.request
        now = datetime.datetime.now(datetime.timezone.utc)
        view = _fetch(request, client.limits, _('the limits'))
        leases = _fetch(request, client.leases, _('the leases'))
        usage = _fetch(request, client.usage, _('the usage'))
        if view is not None:
            limits = view.get('limits') or []
            window = view.get('window') or {}
            context.update(
                limits_read=True,
                charts=present.limit_charts(limits),
                limit_rows=present.limit_rows(limits),
                credits=present.credit_summary(view.get('credits')),
                inert_filters=[f for f in view.get('filters') or []
                               if f.get('inert')],
                window_days=window.get('days'),
                window_ahead=present.is_ahead(window.get('start'),
                                              view.get('at')),
                window_start=present.date(window.get('start')),
                window_end=present.date(window.get('end')),
                at=present.date(view.get('at')))
        if leases is not None:
            context['leases_read'] = True
            context['lease_rows'] = present.lease_rows(
                leases.get('leases') or [], request.user.id)
        if usage is not None:
            context['usage_read'] = True
            context['usage_charts'] = present.usage_charts(usage, now)
            context['usage_start'] = present.date(usage.get('start'))
            context['usage_end'] = present.date(usage.get('end'))
        return context


class QuoteView(views.HorizonFormView):
    """GET: the empty form; POST: the form again, with the quote or with
    the API's message next to the field it names."""

    form_class = forms.QuoteForm
    template_name = 'reservation_quota/quote.html'
    page_title = _('Quote a Lease')

    def form_valid(self, form):
        try:
            answer = client.quote(self.request, form.lease())
        except client.ApiError as exc:
            if exc.status == 400:
                form.add_api_error(exc)
            else:
                messages.error(self.request,
                               _('Could not quote the lease: %s')
                               % exc.message)
            return self.form_invalid(form)
        return self.render_to_response(self.get_context_data(
            form=form, quote=present.quote_result(answer)))
