"""LCM user data for Tacker's v1 VNF LCM: turns the VNFD, the grant and the instantiation request into
the ``nfv`` parameter of the BaseHOT. Runs inside tacker-conductor, so it may import tacker."""

from tacker.vnfm.lcm_user_data import utils
from tacker.vnfm.lcm_user_data.abstract_user_data import AbstractUserData


class VnfUserData(AbstractUserData):
    @staticmethod
    def instantiate(base_hot_dict=None, vnfd_dict=None, inst_req_info=None, grant_info=None):
        params = utils.create_initial_param_dict(base_hot_dict)
        flavors = utils.create_vdu_flavor_dict(vnfd_dict)
        images = utils.create_vdu_image_dict(grant_info)
        cp_vl = utils.create_cpd_vl_dict(base_hot_dict, inst_req_info)
        return utils.create_final_param_dict(params, flavors, images, cp_vl)
