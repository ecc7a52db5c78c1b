variable "project_id" {
  description = "Project of the database."
  type        = string
}

variable "database" {
  description = "Firestore database ID to create (native mode). \"(default)\" is the project's default database."
  type        = string
  default     = "sluice"

  validation {
    condition     = var.database == "(default)" || can(regex("^[a-z][a-z0-9-]{2,61}[a-z0-9]$", var.database))
    error_message = "A Firestore database ID is (default) or 4 to 63 lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "location" {
  description = "Firestore location: a region (e.g. europe-west1) or a multi-region (eur3, nam5)."
  type        = string
}

variable "ttl" {
  description = "Deploy the store's TTL policies (exp of dedup and attempts); store_url then carries ?ttl=true, so sluice leaves those deletions to Firestore."
  type        = bool
  default     = true
}

variable "deletion_protection" {
  description = "Refuse to delete the database (delete_protection_state), and abandon it rather than delete it on destroy."
  type        = bool
  default     = true
}

variable "member" {
  description = "The member (serviceAccount:EMAIL) granted roles/datastore.user on this database only."
  type        = string

  validation {
    condition     = can(regex("^serviceAccount:", var.member))
    error_message = "The member is a service account: serviceAccount:EMAIL."
  }
}
