# sluice on Cloud Run with Cloud Spanner. The secrets come in as variables
# (TF_VAR_access_keys, TF_VAR_maintenance_token), never in a file here.

provider "google" {
  project = var.project_id
  region  = var.region
}

module "sluice" {
  source = "../../modules/cloudrun-spanner"

  project_id        = var.project_id
  region            = var.region
  name              = "sluice-sp"
  image             = var.image
  access_keys       = var.access_keys
  maintenance_token = var.maintenance_token
  processing_units  = var.processing_units
}
