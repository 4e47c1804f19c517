"""LCM user data for Tacker: builds the parameters of the generated BaseHOT (``nfv`` and the catalog
parameters the top template declares) from the VNFD, the grant and the instantiation request.
Runs inside Tacker, so it may import tacker. The same file serves every nfvcat vnfd entry.

- ``VnfUserData``: Tacker's v1 VNF LCM API (``instantiate(base_hot_dict, vnfd_dict, inst_req_info,
  grant_info)``). v1 sends Heat only BaseHOT/<flavour>/nested/*.yaml as ``files``, not what a nested
  template ``get_file``s, so the catalog template's day-0 hook cannot reach Heat through v1: it refuses at
  once with that reason (``V1_REFUSED``) instead of letting the stack fail later.
- ``VnfUserDataV2``: Tacker's v2 API (``instantiate(req, inst, grant_req, grant, tmp_csar_dir)`` returns
  template, parameters and files); it adds each file a nested template ``get_file``s, read from the
  package at the path the template names, so the nested catalog template runs unchanged. Scale is Tacker's
  own (``desired_capacity`` of the VDU's scaling group). ``change_vnfpkg`` returns the new package's top
  template, nested templates and hook files and ``nfv`` (Tacker's PATCH merges them into the stack), with
  ``computeFlavourId`` the flavor each VNFC has now (Tacker's rolling update of a scaling group member writes
  it into the member; the template's flavor resource then moves it to the new package's). Its rollback is
  refused (``ROLLBACK_REFUSED``): Tacker hands the rollback the new package only, and the old BaseHOT comes
  from the old package, so a "rollback" would apply the new template under the old vnfdId. A failed change
  stays FAILED_TEMP: retry it, or terminate.

Keys of ``nfv`` are the ``get_param: [nfv, ...]`` paths of the top template: ``nfv.VDU.<VDU>.image``
(the VDU carries the sw_image_data: the grant's image, else the VNFD's image name) and
``nfv.CP.<external CP>.network`` (the extVirtualLink whose extCps name that CP).
"""

import os

import yaml


def _walk(node, key):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key:
                yield v
            yield from _walk(v, key)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v, key)


def additional_params(top_hot, additional):
    """The top template's parameters other than nfv that the request's additionalParams set."""
    return {name: additional[name] for name in top_hot.get('parameters', {})
            if name != 'nfv' and name in (additional or {})}


def nested_files(files, nested_dir):
    """What the nested templates get_file, keyed by the path as written, read from nested_dir."""
    found = {}
    for body in list(files.values()):
        tpl = yaml.safe_load(body) if isinstance(body, str) else body
        for ref in _walk(tpl, 'get_file'):
            if isinstance(ref, str) and ref not in files:
                with open(os.path.normpath(os.path.join(nested_dir, ref)), encoding='utf-8') as f:
                    found[ref] = f.read()
    return found


try:
    from tacker.vnfm.lcm_user_data.abstract_user_data import AbstractUserData
except ImportError:  # a Tacker without the v1 LCM
    AbstractUserData = object


V1_REFUSED = ("nfvcat VNF packages need Tacker's v2 VNF LCM API (vnflcm/v2, class VnfUserDataV2): v1 sends "
              "Heat only BaseHOT/<flavour>/nested/*.yaml, not the day-0 hook the nested template get_file's")


class VnfUserData(AbstractUserData):
    @staticmethod
    def instantiate(base_hot_dict=None, vnfd_dict=None, inst_req_info=None, grant_info=None):
        raise ValueError(V1_REFUSED)


try:
    from tacker.sol_refactored.common import common_script_utils
    from tacker.sol_refactored.infra_drivers.openstack.userdata_default import DefaultUserData
except ImportError:  # a Tacker without the v2 API
    DefaultUserData = object


class VnfUserDataV2(DefaultUserData):
    @staticmethod
    def instantiate(req, inst, grant_req, grant, tmp_csar_dir):
        fields = DefaultUserData.instantiate(req, inst, grant_req, grant, tmp_csar_dir)
        flavour_id = req['flavourId']
        vnfd = common_script_utils.get_vnfd(inst['vnfdId'], tmp_csar_dir)
        top = yaml.safe_load(fields['template'])
        nfv = fields['parameters']['nfv']
        for name, vdu in nfv.get('VDU', {}).items():
            if 'image' in vdu:
                vdu['image'] = common_script_utils.get_param_image(name, flavour_id, vnfd, grant)
        fields['parameters'].update(additional_params(top, req.get('additionalParams')))
        nested = os.path.join(tmp_csar_dir, 'BaseHOT', flavour_id, 'nested')
        fields['files'].update(nested_files(fields['files'], nested))
        return fields

    @staticmethod
    def change_vnfpkg(req, inst, grant_req, grant, tmp_csar_dir):
        return _package_fields(grant_req['dstVnfdId'], inst, grant, tmp_csar_dir)

    @staticmethod
    def change_vnfpkg_rollback(req, inst, grant_req, grant, tmp_csar_dir):
        raise ValueError(ROLLBACK_REFUSED)


ROLLBACK_REFUSED = ("nfvcat VNF packages do not roll back a change_vnfpkg: Tacker gives the rollback only the new "
                    "package, and the old BaseHOT is in the old one; retry the operation or terminate the VNF")


def current_flavors(inst):
    """VDU -> the flavor its VNFCs have now (Tacker's vnfcResourceInfo metadata)."""
    found = {}
    for vnfc in inst.get('instantiatedVnfInfo', {}).get('vnfcResourceInfo', []):
        flavor = (vnfc.get('metadata') or {}).get('flavor')
        if flavor:
            found.setdefault(vnfc['vduId'], flavor)
    return found


def _package_fields(vnfd_id, inst, grant, tmp_csar_dir):
    """The package's BaseHOT as a change of the running stack: template, nested and hook files, nfv."""
    flavour_id = inst['instantiatedVnfInfo']['flavourId']
    vnfd = common_script_utils.get_vnfd(vnfd_id, tmp_csar_dir)
    hot = vnfd.get_base_hot(flavour_id)
    top = hot['template']
    nfv = common_script_utils.init_nfv_dict(top)
    flavors = current_flavors(inst)
    vdus = {}
    for name, vdu in nfv.get('VDU', {}).items():
        vdus[name] = {k: v for k, v in vdu.items() if k != 'desired_capacity'}  # the level stays as it is
        if 'image' in vdu:
            vdus[name]['image'] = common_script_utils.get_param_image(name, flavour_id, vnfd, grant)
        if name in flavors:
            vdus[name]['computeFlavourId'] = flavors[name]
    files = {key: yaml.safe_dump(value) for key, value in hot.get('files', {}).items()}
    files.update(nested_files(files, os.path.join(tmp_csar_dir, 'BaseHOT', flavour_id, 'nested')))
    return {'template': yaml.safe_dump(top), 'parameters': {'nfv': {'VDU': vdus, 'CP': {}}}, 'files': files}
