# sluice on AWS Lambda with Aurora PostgreSQL Serverless v2. Build the zip
# first (README, AWS Lambda); the secrets come in as variables
# (TF_VAR_access_keys, TF_VAR_db_password), never in a file here.

provider "aws" {
  region = var.region
}

module "sluice" {
  source = "../../modules/lambda-postgres"

  name        = "sluice"
  lambda_zip  = var.lambda_zip
  access_keys = var.access_keys
  db_password = var.db_password
}
