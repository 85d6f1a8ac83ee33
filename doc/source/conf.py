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
"""Sphinx configuration of the placement-quota documentation.

openstackdocstheme is used when it is installed (``pip install -r
doc/requirements.txt`` brings it); otherwise the build falls back to a
stock Sphinx theme, so ``sphinx-build -W`` passes either way.
"""

import importlib.util

project = 'placement-quota'
copyright = '2026, OpenStack Foundation'
author = 'OpenStack Foundation'

extensions = ['oslo_config.sphinxext']
exclude_patterns = ['_build']
master_doc = 'index'
source_suffix = {'.rst': 'restructuredtext'}
pygments_style = 'native'
# The documents name the configuration files and the commands in literal
# blocks; nothing to highlight as Python by default.
highlight_language = 'none'

if importlib.util.find_spec('openstackdocstheme') is not None:
    extensions.append('openstackdocstheme')
    html_theme = 'openstackdocs'
    openstackdocs_repo_name = 'openstack/placement-quota'
    openstackdocs_use_storyboard = False
    openstackdocs_auto_name = False
    openstackdocs_pdf_link = False
else:
    html_theme = 'alabaster'
